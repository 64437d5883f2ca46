"""The Redis result store against a real redis-server: idempotent writes, counts
from key sets, verdicts per model pair, streaming reads, restart survival."""

from __future__ import annotations

import redis
from _support.factories import make_result
from _support.redis_server import RedisServer

from verifleet.store import JobStatus, ResultStore


def _store(url: str) -> ResultStore:
    return ResultStore(redis.Redis.from_url(url), prefix="vftest")


def test_job_lifecycle_and_idempotent_writes(redis_url: str) -> None:
    store = _store(redis_url)
    store.create_job("j1", benchmark_json='{"b": 1}', config_json='{"c": 2}', total_units=2)
    assert store.status("j1") == JobStatus.QUEUED
    assert store.load_spec("j1") == ('{"b": 1}', '{"c": 2}')

    ok, bad = make_result("q1", verified=True), make_result("q1", parsing="j2", verified=False)
    assert store.begin_unit("j1", "u1") == (JobStatus.RUNNING, False, None, 1)
    assert store.status("j1") == JobStatus.RUNNING
    assert store.progress("j1").in_flight == 1
    finished = store.write_unit("j1", "u1", [ok, bad], ["k1", "k2"])
    assert finished is False
    # A redelivered task writes the same unit again: nothing changes.
    store.write_unit("j1", "u1", [make_result("q1", verified=False), bad], ["k1", "k2"])
    progress = store.progress("j1")
    assert (progress.done_units, progress.results, progress.in_flight) == (1, 2, 0)
    stored = {
        r.metadata.parsing.model_name: r.template.verify_result for r in store.iter_results("j1")
    }
    assert stored == {"m-judge": True, "j2": False}, "the first write wins"
    rates = {(p.parsing, p.passed, p.failed) for p in progress.pairs}
    assert rates == {("openai_endpoint:m-judge", 1, 0), ("openai_endpoint:j2", 0, 1)}

    err = make_result("q2", error="answer generation failed: boom", verified=None)
    assert store.write_unit("j1", "u2", [err], ["k3"]) is True
    progress = store.progress("j1")
    assert progress.status == JobStatus.DONE and progress.failed_units == 1
    assert store.done_units("j1") == {"u1", "u2"}
    assert [p.job_id for p in store.list_jobs()] == ["j1"]


def test_unknown_job_and_delete(redis_url: str) -> None:
    store = _store(redis_url)
    assert store.status("nope") is None
    store.create_job("j2", benchmark_json="{}", config_json="{}", total_units=1)
    store.write_unit("j2", "u", [make_result()], ["k"])
    store.delete_job("j2")
    assert not store.exists("j2")
    assert list(store.client.scan_iter(match="vftest:*")) == []


def test_results_survive_a_redis_restart(redis_url: str, redis_server: RedisServer | None) -> None:
    if redis_server is None:  # an external server is not ours to restart
        return
    store = _store(redis_url)
    store.create_job("j3", benchmark_json="{}", config_json="{}", total_units=3)
    store.write_unit("j3", "u1", [make_result()], ["k1"])
    redis_server.restart()
    store = _store(redis_url)
    assert store.progress("j3").done_units == 1
    assert [r.metadata.question_id for r in store.iter_results("j3")] == ["q1"]
