"""A 429's ``Retry-After`` pauses the whole endpoint, for every caller, when the
endpoint refuses again soon after the window shrank; an isolated refusal (slow
start's overshoot, a probe) only shrinks the window.

The 429s are raised inside the gate by hand, as the exception the direct HTTP
caller raises for such a reply (:class:`EndpointStatusError` around a real
``httpx.Response``): the test needs the reply at one exact moment, which a real
endpoint does not give on demand. The fleet gates are two ``RedisCallGate``
objects on separate Redis connections, i.e. what two worker processes hold.
"""

from __future__ import annotations

import contextlib
import time

import httpx
import pytest
import redis

from verifleet.limits import LocalCallGate, NoCapacityError, RedisCallGate
from verifleet.pipeline import MAX_ENDPOINT_PAUSE, CallGate, endpoint_pause
from verifleet.pipeline._llm import EndpointStatusError
from verifleet.pipeline._llm._gate import gate_attempt
from verifleet.schemas import ModelConfig

pytestmark = pytest.mark.integration

PREFIX = "vfpause"
MODEL = ModelConfig.parse("http://127.0.0.1:9/v1#m", max_concurrency=4)
OTHER = ModelConfig.parse("http://127.0.0.1:9/v1#other", max_concurrency=4)


def _reply(status: int, **headers: str) -> EndpointStatusError:
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    return EndpointStatusError(httpx.Response(status, headers=headers, request=request), None)


def _admits(gate: CallGate, model: ModelConfig) -> bool:
    try:
        with gate(model):
            return True
    except NoCapacityError:
        return False


def _answered(gate: CallGate, error: EndpointStatusError) -> None:
    # Through the pipeline's own helper: it reports a 429 (and its Retry-After)
    # to the slot, the way every model call does.
    with pytest.raises(EndpointStatusError), gate_attempt(gate, MODEL, 0):
        raise error


def _callers(redis_url: str, kind: str) -> tuple[CallGate, CallGate]:
    """Two callers of one endpoint: two workers' gates, or one local gate twice."""
    if kind == "local":
        gate = LocalCallGate(max_wait=0.2)
        return gate, gate

    def worker_gate() -> RedisCallGate:
        client = redis.Redis.from_url(redis_url)
        return RedisCallGate(client, lease_seconds=30, max_wait=0.2, prefix=PREFIX)

    return worker_gate(), worker_gate()


def _pair(redis_url: str, kind: str) -> tuple[CallGate, CallGate]:
    """Two callers of an endpoint whose window is past slow start: one 429 seen
    with 4 calls in flight, which leaves a window of 3."""
    first, second = _callers(redis_url, kind)
    with contextlib.ExitStack() as busy:
        for _ in range(3):
            busy.enter_context(gate_attempt(second, MODEL, 0))
        _answered(first, _reply(429))
    return first, second


@pytest.mark.parametrize("kind", ["fleet", "local"])
def test_slow_start_overshoot_shrinks_the_window_without_pausing(redis_url: str, kind: str) -> None:
    first, second = _callers(redis_url, kind)
    # Two calls admitted during slow start, both refused: neither pauses anyone
    # (the window's first decrease is what corrects an overshoot) ...
    with pytest.raises(EndpointStatusError), gate_attempt(second, MODEL, 0):
        _answered(first, _reply(429, **{"retry-after": "30"}))
        raise _reply(429, **{"retry-after": "30"})
    assert _admits(second, MODEL)
    assert _admits(first, MODEL)
    # ... but a refusal of a call admitted after that decrease, soon after it, does.
    _answered(first, _reply(429, **{"retry-after": "1"}))
    assert not _admits(second, MODEL)


@pytest.mark.parametrize("kind", ["fleet", "local"])
def test_an_isolated_refusal_long_after_the_last_decrease_pauses_no_one(
    redis_url: str, kind: str
) -> None:
    first, second = _pair(redis_url, kind)
    time.sleep(1.2)  # longer than the policy's hold (1 s) and the latency (~0)
    _answered(first, _reply(429, **{"retry-after": "30"}))  # e.g. a probe one call too far
    assert _admits(second, MODEL)
    _answered(first, _reply(429, **{"retry-after": "30"}))  # refused again at once: pause
    assert not _admits(second, MODEL)


@pytest.mark.parametrize("kind", ["fleet", "local"])
def test_retry_after_stops_every_caller_of_that_endpoint(redis_url: str, kind: str) -> None:
    first, second = _pair(redis_url, kind)
    assert _admits(second, MODEL)
    _answered(first, _reply(429, **{"retry-after": "30"}))
    assert not _admits(second, MODEL)  # the other worker waits too ...
    assert not _admits(first, MODEL)
    assert _admits(second, OTHER)  # ... for that endpoint only


@pytest.mark.parametrize("kind", ["fleet", "local"])
def test_the_pause_ends_when_the_server_said(redis_url: str, kind: str) -> None:
    first, second = _pair(redis_url, kind)
    _answered(first, _reply(429, **{"retry-after-ms": "400"}))
    assert not _admits(second, MODEL)
    time.sleep(0.6)
    assert _admits(second, MODEL)


@pytest.mark.parametrize("kind", ["fleet", "local"])
def test_no_pause_without_retry_after_or_for_other_errors(redis_url: str, kind: str) -> None:
    first, second = _pair(redis_url, kind)
    _answered(first, _reply(429))
    _answered(first, _reply(503, **{"retry-after": "30"}))
    assert _admits(second, MODEL)


def test_a_later_shorter_retry_after_does_not_shorten_the_pause(redis_url: str) -> None:
    first, second = _pair(redis_url, "fleet")
    # second's call is in flight when first's gets the long pause, then its own
    # 429 asks for a short one.
    with pytest.raises(EndpointStatusError), gate_attempt(second, MODEL, 0):
        _answered(first, _reply(429, **{"retry-after": "30"}))
        raise _reply(429, **{"retry-after-ms": "100"})
    time.sleep(0.3)
    assert not _admits(second, MODEL)
    client = redis.Redis.from_url(redis_url)
    with contextlib.closing(client):
        (key,) = client.keys(f"{PREFIX}:limit:*:pause")
        assert 25_000 < client.pttl(key) <= 30_000


def test_endpoint_pause_reads_retry_after_of_429s_and_caps_it() -> None:
    assert endpoint_pause(_reply(429, **{"retry-after": "7"})) == 7.0
    assert endpoint_pause(_reply(429, **{"retry-after-ms": "1500"})) == 1.5
    assert endpoint_pause(_reply(429, **{"retry-after": "86400"})) == MAX_ENDPOINT_PAUSE
    assert endpoint_pause(_reply(429)) == 0.0
    assert endpoint_pause(_reply(500, **{"retry-after": "7"})) == 0.0
    assert endpoint_pause(None) == 0.0
