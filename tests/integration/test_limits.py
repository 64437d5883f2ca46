"""Endpoint limits hold across the fleet and in local mode.

Two real ``verifleet worker`` processes share one Redis-held limit per endpoint;
the model endpoint is the fault-injecting double of ``bench/endpoint.py``, whose
``/stats`` counters (calls, peak in-flight, 429s) are what an endpoint owner would
see. Nothing here asserts a duration.
"""

from __future__ import annotations

import contextlib

import pytest
import redis
from _support.fleet import Fleet
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.limits import AdaptivePolicy, LocalCallGate, NoCapacityError, RedisCallGate
from verifleet.orchestrator._fleet.job import Job
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.pipeline import CallGate
from verifleet.pipeline._llm._gate import gate_attempt
from verifleet.schemas import ModelConfig, VerificationConfig
from verifleet.store import JobStatus

pytestmark = pytest.mark.integration

CAP = 3


def _config(
    ep: RunningEndpoint, *, extra: dict[str, object] | None = None, **limits: int
) -> VerificationConfig:
    # One model name for both roles: answering and parsing calls share one
    # endpoint limit, so the endpoint's own peak in-flight is comparable to it.
    model = ModelConfig.parse(f"{ep.base_url}#m", **limits)
    return VerificationConfig.build(
        answering_models=[model], parsing_models=[model], max_concurrency=16, **(extra or {})
    )


def test_two_workers_never_exceed_the_fleet_wide_cap(fleet: Fleet, redis_url: str) -> None:
    bench, answers = capitals_benchmark(40)
    # Latency keeps each call in flight long enough that 16 threads per worker
    # would overlap far beyond the cap without the limiter.
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=60)) as ep:
        config = _config(ep, max_concurrency=CAP)
        fleet.start_worker("w1", concurrency=16)
        fleet.start_worker("w2", concurrency=16)
        fleet.wait_ready(["w1", "w2"])
        job = Job.submit(bench, config, redis_url)
        progress = job.wait(timeout=180)
        stats = ep.stats()
    assert progress.status == JobStatus.DONE
    assert (progress.done_units, progress.failed_units) == (40, 0)
    assert stats.calls == 80  # one answer and one parse per unit, none refused
    assert stats.peak_in_flight == CAP  # reached, never exceeded
    assert stats.sent_429 == 0
    for name in ("w1", "w2"):
        assert "succeeded" in fleet.log(name), f"{name} ran no task, so the cap was not shared"


def test_fleet_requests_per_minute_budget_is_shared(fleet: Fleet, redis_url: str) -> None:
    bench, answers = capitals_benchmark(10)
    budget = 12  # 20 calls wanted; the job ends well inside one minute
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        config = _config(ep, requests_per_minute=budget)
        fleet.start_worker("w1", concurrency=4)
        fleet.start_worker("w2", concurrency=4)
        fleet.wait_ready(["w1", "w2"])
        job = Job.submit(bench, config, redis_url)
        # Units that find no budget within the unit deadline (8 s in the fleet
        # fixture) end as errored results instead of calling the endpoint.
        progress = job.wait(timeout=180)
        stats = ep.stats()
    assert progress.status == JobStatus.DONE and progress.done_units == 10
    assert stats.calls == budget
    errored = [r for r in job.iter_results() if not r.metadata.completed_without_errors]
    assert errored, "every unit ran, so the budget was not enforced"
    assert all("no capacity" in (r.metadata.error or "") for r in errored)


def test_local_mode_holds_the_cap() -> None:
    bench, answers = capitals_benchmark(30)
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=40)) as ep:
        config = _config(ep, max_concurrency=CAP)
        results = [r for _unit, rs in LocalRunner(bench, config).run() for r in rs]
        stats = ep.stats()
    assert len(results) == 30
    assert all(r.metadata.completed_without_errors for r in results)
    assert stats.peak_in_flight == CAP and stats.sent_429 == 0 and stats.calls == 60


def test_local_mode_backs_off_on_429_and_loses_nothing() -> None:
    bench, answers = capitals_benchmark(30)
    # The endpoint itself admits 2 calls at once and answers 429 (Retry-After 0)
    # beyond that, while the configured cap is 6: only adaptation avoids 429s.
    endpoint = EndpointConfig(answers=answers, latency_ms=40, max_concurrency=2, retry_after_s=0)
    with run_endpoint_in_thread(endpoint) as ep:
        retry = {"max_attempts": 20, "initial_delay": 0.05, "max_delay": 0.5}
        config = _config(ep, extra={"retry_policy": retry}, max_concurrency=6)
        results = [r for _unit, rs in LocalRunner(bench, config).run() for r in rs]
        stats = ep.stats()
    assert all(r.metadata.completed_without_errors for r in results), [
        r.metadata.error for r in results if not r.metadata.completed_without_errors
    ]
    assert stats.sent_429 > 0  # the endpoint did push back ...
    assert stats.by_status.get("200") == 60  # ... and every call got through in the end


class _RateLimited(Exception):
    # Stands for the endpoint's 429 reply: the pipeline reads only ``status_code``,
    # and a test needs it raised at one exact moment, not at the endpoint's whim.
    status_code = 429


# These tests are about 429s: a stall of this shared machine must not count as
# the latency pushback the window also reacts to.
_NO_LATENCY_SIGNAL = AdaptivePolicy(latency_tolerance=1e9)


def _gates(redis_url: str) -> dict[str, CallGate]:
    client = redis.Redis.from_url(redis_url)
    return {
        "fleet": RedisCallGate(
            client, lease_seconds=30, max_wait=0.5, prefix="vfgate", policy=_NO_LATENCY_SIGNAL
        ),
        "local": LocalCallGate(max_wait=0.5, policy=_NO_LATENCY_SIGNAL),
    }


def _slots_available(gate: CallGate, model: ModelConfig, most: int) -> int:
    """How many calls can hold a slot at once (tries up to ``most``)."""
    with contextlib.ExitStack() as stack:
        for held in range(most):
            try:
                stack.enter_context(gate(model))
            except NoCapacityError:
                return held
        return most


@pytest.mark.parametrize("kind", ["fleet", "local"])
def test_gate_shrinks_once_on_a_burst_of_429s_and_grows_back(redis_url: str, kind: str) -> None:
    gate = _gates(redis_url)[kind]
    model = ModelConfig.parse("http://127.0.0.1:9/v1#m", max_concurrency=4)
    assert _slots_available(gate, model, 6) == 4
    attempts = [gate_attempt(gate, model, 0) for _ in range(4)]
    for attempt in attempts:
        attempt.__enter__()
    for attempt in attempts[:3]:  # 4 in flight, 3 come back 429: one shrink, not three
        assert not attempt.__exit__(_RateLimited, _RateLimited(), None)  # passes through
    attempts[3].__exit__(None, None, None)
    assert _slots_available(gate, model, 6) == 3  # 0.9 x 4 calls in flight
    with gate(model):  # successes with half the window in use grow it back ...
        for _ in range(200):
            with gate(model):
                pass
    assert _slots_available(gate, model, 6) == 4  # ... to the configured cap, no further


def test_fleet_gate_applies_a_lowered_cap_at_once(redis_url: str) -> None:
    gate = _gates(redis_url)["fleet"]
    with gate(ModelConfig.parse("http://127.0.0.1:9/v1#m", max_concurrency=8)):
        pass  # stores a window for the endpoint
    lowered = ModelConfig.parse("http://127.0.0.1:9/v1#m", max_concurrency=3)
    assert _slots_available(gate, lowered, 6) == 3
