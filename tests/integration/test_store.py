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


class _CountingConnection(redis.Connection):
    """Counts what goes to the server: a command, a pipeline or a script is one
    request (each may wake an idle server, which costs it more than most
    commands do)."""

    requests = 0

    def send_packed_command(self, command: object, check_health: bool = True) -> None:
        type(self).requests += 1
        super().send_packed_command(command, check_health)  # type: ignore[arg-type]


def test_progress_is_one_round_trip_with_pairs_and_share(redis_url: str) -> None:
    """Watchers and dashboards poll a job's progress several times a second,
    each; it was six round trips (meta, counts, one per pair, the share)."""
    pool = redis.ConnectionPool.from_url(redis_url, connection_class=_CountingConnection)
    store = ResultStore(redis.Redis(connection_pool=pool), prefix="vfprog")
    client = store.client
    try:
        store.create_job("big", benchmark_json="{}", config_json="{}", total_units=4)
        store.create_job("small", benchmark_json="{}", config_json="{}", total_units=4)
        for job, weight in (("big", 3), ("small", 1)):
            client.hset(
                f"vfprog:job:{job}:meta", mapping={"queue": "q", "cursor": 0, "weight": weight}
            )
            client.zadd("vfprog:sched:q", {job: 0})
        ok, bad = make_result("q1", verified=True), make_result("q1", parsing="j2", verified=False)
        store.write_unit("big", "u1", [ok, bad], ["k1", "k2"])
        store.write_unit("big", "u2", [make_result("q2", error="boom", verified=None)], ["k3"])
        store.begin_unit("big", "u3")
        store.progress("big")  # connects and loads the script
        _CountingConnection.requests = 0
        progress = store.progress("big")
        assert _CountingConnection.requests == 1
        assert (progress.done_units, progress.failed_units, progress.in_flight) == (2, 1, 1)
        assert progress.results == 3 and progress.total_units == 4
        assert progress.share == 0.75 and progress.weight == 3.0 and progress.queue == "q"
        counts = {(p.parsing, p.passed, p.failed, p.errors) for p in progress.pairs}
        assert counts == {("openai_endpoint:m-judge", 1, 0, 1), ("openai_endpoint:j2", 0, 1, 0)}
        assert store.progress("small").share == 0.25
        client.zrem("vfprog:sched:q", "small")  # gives out no more units: all the share
        assert store.progress("big").share == 1.0
        assert store.progress("small").share == 0.0
        client.hdel("vfprog:job:small:meta", "cursor")  # never scheduled
        assert store.progress("small").share is None
    finally:
        for key in client.scan_iter(match="vfprog:*"):
            client.delete(key)
