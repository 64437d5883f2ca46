"""Jobs share the fleet by weight, and tenant queues keep jobs on their own workers.

A real redis-server, real ``verifleet worker`` processes and real HTTP calls to
the scripted endpoint of ``bench/endpoint.py`` (deterministic answers and a fixed
latency without a GPU). No timing is asserted: the orders of events are (a job
finishes while another is still running; one job got more of the units done
over the same interval than another).
"""

from __future__ import annotations

import time

import pytest
from _support.fleet import Fleet, run_cli
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.orchestrator._fleet.job import Job
from verifleet.schemas import ModelConfig, VerificationConfig
from verifleet.store import JobStatus

pytestmark = pytest.mark.integration


def _config(ep: RunningEndpoint, replicates: int) -> VerificationConfig:
    return VerificationConfig.build(
        answering_models=[ModelConfig.parse(f"{ep.base_url}#answerer")],
        parsing_models=[ModelConfig.parse(f"{ep.base_url}#judge")],
        replicate_count=replicates,
    )


def _wait(job: Job, n: int, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while (done := job.progress().done_units) < n:
        assert time.monotonic() < deadline, f"{job.job_id}: {done} units done after {timeout}s"
        time.sleep(0.1)
    return done


def test_a_small_job_behind_a_large_one_finishes_first(fleet: Fleet, redis_url: str) -> None:
    bench, answers = capitals_benchmark(10)
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=40)) as ep:
        fleet.start_worker("w1", concurrency=8)
        fleet.wait_ready(["w1"])
        large = Job.submit(bench, _config(ep, replicates=150), redis_url)  # 1,500 units
        _wait(large, 20)
        small = Job.submit(bench, _config(ep, replicates=1), redis_url)  # 10 units
        done = small.wait(timeout=120, poll=0.1)
        behind = large.progress()
        # The small job is done while the large one still has most of its units.
        assert done.status == JobStatus.DONE and done.results == 10
        assert behind.status == JobStatus.RUNNING
        assert behind.done_units < behind.total_units
        # Cancelled, the large job leaves the schedule: nothing of it is sent any more.
        large.cancel()
        time.sleep(2)
        settled = large.progress().done_units
        time.sleep(2)
        assert large.progress().done_units == settled < 1500
        assert large.store.schedule.scheduled("verifleet") == set()


def test_weights_share_the_units_done(fleet: Fleet, redis_url: str) -> None:
    bench, answers = capitals_benchmark(10)
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=40)) as ep:
        fleet.start_worker("w1", concurrency=8)
        fleet.wait_ready(["w1"])
        config = _config(ep, replicates=100)  # 1,000 units each: both saturate the worker
        heavy = Job.submit(bench, config, redis_url, weight=3)
        light = Job.submit(bench, config, redis_url, weight=1)
        assert heavy.progress().share == 0.75 and light.progress().share == 0.25
        status = run_cli("status", heavy.job_id, "--redis", redis_url)
        assert "weight 3  share 75%" in status.stdout, status.stdout + status.stderr
        # From once both run (the heavy job's first fill went out alone) ...
        _wait(light, 10)
        h0, l0 = heavy.progress().done_units, light.progress().done_units
        # ... over the next 200 units done by the two of them:
        deadline = time.monotonic() + 120
        while True:
            h1, l1 = heavy.progress().done_units, light.progress().done_units
            if (h1 - h0) + (l1 - l0) >= 200:
                break
            assert time.monotonic() < deadline
            time.sleep(0.1)
        heavy.cancel()
        light.cancel()
    share = (h1 - h0) / ((h1 - h0) + (l1 - l0))
    assert 0.65 <= share <= 0.85, (h1 - h0, l1 - l0)


def test_a_tenant_queue_is_served_only_by_its_workers(fleet: Fleet, redis_url: str) -> None:
    bench, answers = capitals_benchmark(6)
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=10)) as ep:
        fleet.start_worker("general", concurrency=4)
        fleet.wait_ready(["general"])
        config = _config(ep, replicates=2)
        theirs = Job.submit(bench, config, redis_url, queue="tenant-a")
        ours = Job.submit(bench, config, redis_url)
        assert ours.wait(timeout=120, poll=0.2).done_units == 12
        # The general worker finished its queue's job and never took the tenant's.
        time.sleep(1)
        waiting = theirs.progress()
        assert (waiting.status, waiting.done_units, waiting.queue) == (
            JobStatus.QUEUED,
            0,
            "tenant-a",
        )
        fleet.start_worker("tenant", concurrency=4, queues="tenant-a")
        fleet.wait_ready(["tenant"])
        assert theirs.wait(timeout=120, poll=0.2).done_units == 12
    assert fleet.log("general").count("succeeded") == 12
    assert fleet.log("tenant").count("succeeded") == 12
