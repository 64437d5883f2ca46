"""``--results-to`` on a real fleet: results leave Redis while the job runs, and
the final result set equals a run's without it, through a worker killed with
SIGKILL and a Redis restart.

A real redis-server (AOF on, so a restart keeps its data), real ``verifleet
worker`` processes and real HTTP calls to the scripted endpoint of
``bench/endpoint.py`` (deterministic answers without a GPU).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from _support.fleet import Fleet, until
from _support.jobs import capitals_benchmark, comparable
from _support.redis_server import RedisServer

import verifleet
from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import StoredResults
from verifleet.orchestrator._fleet.job import Job
from verifleet.schemas import JobSpec, ModelConfig, VerificationConfig
from verifleet.store import JobStatus

pytestmark = pytest.mark.integration


def _run(
    fleet: Fleet,
    redis_url: str,
    tmp_path: Path,
    workers: list[str],
    fault: Callable[[Job], None],
    *,
    redis_outage: bool = False,
) -> None:
    """Run a 40-unit job with ``--results-to`` on ``workers``, call ``fault`` once
    a shard is recorded, and check the results against a local run's."""
    bench, answers = capitals_benchmark(40)
    drain = {"VERIFLEET_DRAIN_BATCH": "5", "VERIFLEET_DRAIN_INTERVAL": "0.3"}
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=300)) as ep:
        config = VerificationConfig.build(
            answering_models=[ModelConfig.parse(f"{ep.base_url}#answerer")],
            parsing_models=[ModelConfig.parse(f"{ep.base_url}#judge")],
        )
        for name in workers:
            fleet.start_worker(name, concurrency=4, **drain)
        fleet.wait_ready(workers, timeout=180)
        job = Job.submit(bench, config, redis_url, results_to=str(tmp_path / "out"))
        shards = job.store.keys(job.job_id).shards
        # Results leave Redis while the job runs.
        until(lambda: job.store.client.hlen(shards) > 0, "no shard recorded")
        assert job.progress().status == JobStatus.RUNNING
        fault(job)
        progress = job.wait(timeout=240)
        # Once done, the last results follow.
        results_hash = job.store.keys(job.job_id).results
        until(lambda: job.store.client.hlen(results_hash) == 0, "results left in Redis")
        fleet_results = job.result_set()
        local = verifleet.run(bench, config).results
    assert progress.status == JobStatus.DONE
    assert job.progress().results == 40
    spec = JobSpec(bench, config)
    expected = {k for unit in spec.units() for k in spec.result_keys(unit, job.job_id)}
    assert sorted(StoredResults(job.store, job.job_id).result_keys()) == sorted(expected)
    assert len(fleet_results.results) == 40
    got, want = comparable(fleet_results), comparable(local)
    assert got.keys() == want.keys()
    # Each result is the local run's, or (during the Redis outage only) a model
    # call whose endpoint limiter could not reach Redis: today that call fails
    # its unit's results instead of going back to Celery (see the report).
    outage = [k for k in got if got[k] != want[k]]
    assert redis_outage or not outage, outage
    errors = [
        r.metadata.error or ""
        for r in fleet_results.results
        if (
            r.metadata.question_id,
            r.metadata.answering.canonical_key,
            r.metadata.parsing.canonical_key,
            r.metadata.replicate,
        )
        in outage
    ]
    # Redis refusing connections, closing them, or loading its data back.
    signs = ("connect", "loading", "redis")
    assert all(any(sign in e.lower() for sign in signs) for e in errors), errors
    recorded = StoredResults(job.store, job.job_id).shards()
    assert len(recorded) >= 2
    assert all(Path(url.removeprefix("file://")).exists() for url in recorded)


def test_results_drain_through_a_killed_worker(
    fleet: Fleet, redis_url: str, tmp_path: Path
) -> None:
    def kill(job: Job) -> None:
        fleet.kill("victim")
        done = job.progress().done_units
        until(lambda: job.progress().done_units >= done + 4, "no progress after the kill")

    _run(fleet, redis_url, tmp_path, ["victim", "survivor"], kill)


def test_results_drain_through_a_redis_restart(
    fleet: Fleet, redis_url: str, redis_server: RedisServer | None, tmp_path: Path
) -> None:
    if redis_server is None:
        pytest.fail("this test needs its own redis-server; unset VERIFLEET_TEST_REDIS_URL")
    server = redis_server
    _run(fleet, redis_url, tmp_path, ["w1"], lambda _job: server.restart(), redis_outage=True)
