"""Tokens-per-minute budgets across the fleet: two Redis gates (two workers' worth,
each with its own Redis connection) share one budget held in a real redis-server.

Calls go to the fault-injecting endpoint of ``bench/endpoint.py`` through the real
langchain caller, so the estimate reserved and the usage reported are the
pipeline's own; the endpoint's call counter is the independent check. Nothing
here asserts a duration.
"""

from __future__ import annotations

import threading

import pytest
import redis

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.limits import LocalCallGate, NoCapacityError, RedisCallGate, endpoint_id
from verifleet.pipeline import ChatModelCache, LangchainChatCaller, ModelCallError, UsageTracker
from verifleet.pipeline._llm._gate import gate_attempt
from verifleet.schemas import ModelConfig, RetryPolicy

pytestmark = pytest.mark.integration

PREFIX = "vftpm"


def _gate(redis_url: str, max_wait: float) -> RedisCallGate:
    # One client per gate: two gates are two worker processes as far as Redis sees.
    client = redis.Redis.from_url(redis_url)
    return RedisCallGate(client, lease_seconds=30, max_wait=max_wait, prefix=PREFIX)


def _model(ep: RunningEndpoint, budget: int, **extra: object) -> ModelConfig:
    return ModelConfig(
        model_name="m",
        interface="openai_endpoint",
        endpoint_base_url=ep.base_url,
        tokens_per_minute=budget,
        **extra,  # type: ignore[arg-type]
    )


def test_two_gates_share_one_token_budget(redis_url: str) -> None:
    # Each call: a 200-character prompt (the endpoint counts 50 prompt tokens) and
    # a 20-token reply, i.e. 70 tokens used, but 50 + max_tokens 100 = 150
    # reserved while in flight. A call starts only if the window holds at most
    # 300 - 150 = 150 tokens, and every started call leaves at least 70 in it, so
    # a third call is the last that can start (2 x 70 <= 150 < 3 x 70). Without
    # sharing, each gate would start three; without replacing the estimates by
    # the usage, only two could start.
    budget, calls_per_gate = 300, 4
    with run_endpoint_in_thread(EndpointConfig(reply_tokens=20)) as ep:
        model = _model(ep, budget, max_tokens=100)
        gates = [_gate(redis_url, max_wait=6.0) for _ in range(2)]
        outcomes: list[str] = []
        lock = threading.Lock()

        def one_call(gate: RedisCallGate, i: int) -> None:
            caller = LangchainChatCaller(
                model,
                tracker=UsageTracker(),
                clients=ChatModelCache(),
                policy=RetryPolicy(max_attempts=1),  # a refusal must not be retried
                request_timeout=10.0,
                call_gate=gate,
            )
            prompt = f"{i:03d}" + "p" * 197
            try:
                caller.invoke([{"role": "user", "content": prompt}], stage="answer_generation")
                outcome = "called"
            except ModelCallError as exc:
                outcome = str(exc)
            with lock:
                outcomes.append(outcome)

        threads = [
            threading.Thread(target=one_call, args=(gate, n * calls_per_gate + i))
            for n, gate in enumerate(gates)
            for i in range(calls_per_gate)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stats = ep.stats()
        spends = [gate.spends(model) for gate in gates]
    assert outcomes.count("called") == stats.calls == 3
    refusals = [o for o in outcomes if o != "called"]
    assert len(refusals) == 5 and all("no capacity" in o for o in refusals), refusals
    # Both gates read the same window from Redis: three calls, each settled at
    # the 70 tokens the endpoint reported, all within one minute of each other.
    assert spends[0] == spends[1]
    assert [spend.tokens for spend in spends[0]] == [70, 70, 70]
    starts = [spend.start_ms for spend in spends[0]]
    assert max(starts) - min(starts) < 60_000
    assert sum(spend.tokens for spend in spends[0]) <= budget


def test_a_call_larger_than_the_budget_passes_an_empty_window_alone(redis_url: str) -> None:
    model = ModelConfig.parse("http://127.0.0.1:9/v1#big", tokens_per_minute=100)
    first, second = _gate(redis_url, max_wait=0.3), _gate(redis_url, max_wait=0.3)
    with first(model, tokens=500):  # would otherwise wait forever
        pass
    with (
        pytest.raises(NoCapacityError, match="100 tokens/min, this call 1 tokens"),
        second(model, tokens=1),
    ):
        pass
    assert [spend.tokens for spend in second.spends(model)] == [500]


def test_spends_age_out_of_the_window_with_their_tokens(redis_url: str) -> None:
    model = ModelConfig.parse("http://127.0.0.1:9/v1#aging", tokens_per_minute=100)
    gate = _gate(redis_url, max_wait=0.3)
    with gate(model, tokens=60):
        pass
    client = redis.Redis.from_url(redis_url)
    spends_key = f"{PREFIX}:limit:{endpoint_id(model)}:spends"
    (old,) = client.zrange(spends_key, 0, -1)
    with gate(model, tokens=30):
        pass
    # Move the first call 61 s into the past by Redis's clock instead of waiting a
    # minute: the sorted set of starts is the window the Lua script reads.
    seconds, micros = client.time()
    client.zadd(spends_key, {old: seconds * 1000 + micros // 1000 - 61_000}, xx=True)
    assert [spend.tokens for spend in gate.spends(model)] == [30]
    with gate(model, tokens=70):  # 30 + 70: the 60 left the running total too
        pass
    with pytest.raises(NoCapacityError), gate(model, tokens=1):
        pass
    # sorted: the two calls may start in the same millisecond, and then their
    # order in the window is their random call ids'
    assert sorted(spend.tokens for spend in gate.spends(model)) == [30, 70]
    # the aged-out call's record is gone; the two live calls and '#sum' remain
    assert client.hlen(f"{PREFIX}:limit:{endpoint_id(model)}:spent") == 3


class _RateLimited(Exception):
    # Stands for the endpoint's 429 reply: the pipeline reads only
    # ``status_code``, and the test needs it raised at one exact moment.
    status_code = 429


@pytest.mark.parametrize("kind", ["fleet", "local"])
def test_a_429_frees_its_reservation_and_other_failures_keep_it(redis_url: str, kind: str) -> None:
    model = ModelConfig.parse(f"http://127.0.0.1:9/v1#fail-{kind}", tokens_per_minute=100)
    fleet = _gate(redis_url, max_wait=0.3)
    local = LocalCallGate(max_wait=0.3)

    def in_window() -> int:
        if kind == "fleet":
            return sum(spend.tokens for spend in fleet.spends(model))
        return local.tokens_in_window(model)

    gate = fleet if kind == "fleet" else local
    with pytest.raises(_RateLimited), gate_attempt(gate, model, 80):
        raise _RateLimited
    assert in_window() == 0
    with pytest.raises(TimeoutError), gate(model, tokens=80):
        raise TimeoutError
    assert in_window() == 80
