"""A worker process keeps a finished call's endpoint slot for its next call
(``RedisCallGate(keep_idle=...)``) without giving up the fleet-wide limits.

Each ``RedisCallGate`` on its own Redis connection stands for one worker
process. Nothing here asserts a duration: the waits are bounded by the gates'
``max_wait`` and by thread joins, and a starved caller shows as a
``NoCapacityError``.
"""

from __future__ import annotations

import contextlib
import threading

import pytest
import redis

from verifleet.limits import (
    AdaptivePolicy,
    EndpointLimits,
    NoCapacityError,
    RedisCallGate,
    endpoint_id,
    reclaim_leases,
)
from verifleet.limits._pool import Ended, Permit, SlotPool
from verifleet.pipeline._llm._gate import gate_attempt
from verifleet.schemas import ModelConfig

pytestmark = pytest.mark.integration

PREFIX = "vfkeep"
# No latency signal: a stall of this shared machine must not shrink the window.
STEADY = AdaptivePolicy(latency_tolerance=1e9)


def _gate(
    redis_url: str, *, keep_idle: float, max_wait: float = 5.0, **kw: object
) -> RedisCallGate:
    client = redis.Redis.from_url(redis_url)
    return RedisCallGate(
        client,
        lease_seconds=30,
        max_wait=max_wait,
        prefix=PREFIX,
        keep_idle=keep_idle,
        policy=STEADY,
        **kw,  # type: ignore[arg-type]
    )


def _leases(redis_url: str, model: ModelConfig) -> list[str]:
    client = redis.Redis.from_url(redis_url)
    with contextlib.closing(client):
        members = client.zrange(f"{PREFIX}:limit:{endpoint_id(model)}:leases", 0, -1)
        return sorted(m.decode() for m in members)


def _back_to_back(
    gates: list[RedisCallGate], model: ModelConfig, *, threads_per_gate: int, calls_each: int = 40
) -> tuple[list[int], list[BaseException], int]:
    """Threads of each gate (process) calling the endpoint back to back, 5 ms a
    call; then the gates are closed. Returns the calls per gate, what failed
    and the most calls in flight at once."""
    calls = [0] * len(gates)
    failures: list[BaseException] = []
    in_flight = peak = 0
    lock = threading.Lock()

    def caller(which: int) -> None:
        nonlocal in_flight, peak
        try:
            for _ in range(calls_each):
                with gates[which](model):
                    with lock:
                        in_flight += 1
                        peak = max(peak, in_flight)
                    threading.Event().wait(0.005)
                    with lock:
                        in_flight -= 1
                        calls[which] += 1
        except NoCapacityError as exc:
            failures.append(exc)

    order = [g for _ in range(threads_per_gate) for g in range(len(gates))]
    threads = [threading.Thread(target=caller, args=(g,)) for g in order]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for gate in gates:
        gate.close()
    return calls, failures, peak


def test_a_kept_slot_serves_the_next_call_and_goes_back_when_closed(redis_url: str) -> None:
    model = ModelConfig.parse("http://127.0.0.1:9/v1#kept", max_concurrency=4)
    gate = _gate(redis_url, keep_idle=60.0)
    with gate(model):
        pass
    kept = _leases(redis_url, model)
    assert len(kept) == 1  # the call ended, its slot stayed with the process ...
    for _ in range(5):
        with gate(model):
            assert _leases(redis_url, model) == kept  # ... and serves the next calls
    gate.close()
    assert _leases(redis_url, model) == []


def test_without_keeping_every_slot_goes_back_as_its_call_ends(redis_url: str) -> None:
    model = ModelConfig.parse("http://127.0.0.1:9/v1#plain", max_concurrency=4)
    gate = _gate(redis_url, keep_idle=0.0)
    with gate(model):
        assert len(_leases(redis_url, model)) == 1
    assert _leases(redis_url, model) == []


def test_a_slot_kept_idle_goes_to_another_process_that_waits(redis_url: str) -> None:
    model = ModelConfig.parse("http://127.0.0.1:9/v1#idle", max_concurrency=1)
    holder = _gate(redis_url, keep_idle=0.2)
    other = _gate(redis_url, keep_idle=0.2, max_wait=8.0)
    with holder(model):
        pass  # holder keeps the endpoint's only slot
    with other(model):  # waits until holder gives it back, within max_wait
        assert len(_leases(redis_url, model)) == 1
    holder.close()
    other.close()


@pytest.mark.parametrize("window", [1, 2])
def test_processes_that_keep_slots_take_turns_on_a_small_window(
    redis_url: str, window: int
) -> None:
    # Two processes whose threads call the endpoint back to back: a process
    # that kept its slots for itself would starve the other past max_wait.
    model = ModelConfig.parse(f"http://127.0.0.1:9/v1#turns{window}", max_concurrency=window)
    gates = [_gate(redis_url, keep_idle=0.2, max_wait=8.0) for _ in range(2)]
    calls, failures, peak = _back_to_back(gates, model, threads_per_gate=2)
    assert failures == []
    assert calls == [80, 80]
    assert peak <= window  # the fleet-wide cap held at every moment


def test_a_pushback_gives_the_slot_back_and_shrinks_the_window(redis_url: str) -> None:
    model = ModelConfig.parse("http://127.0.0.1:9/v1#pushed", max_concurrency=4)
    gate = _gate(redis_url, keep_idle=60.0)

    class RateLimited(Exception):
        status_code = 429

    with contextlib.ExitStack() as stack:
        for _ in range(3):
            stack.enter_context(gate(model))
        with pytest.raises(RateLimited), gate_attempt(gate, model, 0):
            raise RateLimited
    window = gate.window(model)
    assert window is not None and window.peak == 4  # 4 calls in flight at the 429
    assert window.limit(100) == 3
    gate.close()
    assert _leases(redis_url, model) == []


def test_the_reaper_returns_the_slots_of_a_process_that_is_gone(redis_url: str) -> None:
    model = ModelConfig.parse("http://127.0.0.1:9/v1#reaped", max_concurrency=2)
    dead = _gate(redis_url, keep_idle=60.0, owner="host:1:dead")
    live = _gate(redis_url, keep_idle=60.0, owner="host:2:live")
    with dead(model):
        pass  # kept: the process is then killed with it
    with live(model):
        client = redis.Redis.from_url(redis_url)
        newcomer = _gate(redis_url, keep_idle=0.0, max_wait=0.2)
        with pytest.raises(NoCapacityError):
            newcomer(model).__enter__()  # both slots held
        released = reclaim_leases(client, prefix=PREFIX, alive=lambda owners: {"host:2:live"})
        assert released == 1
        with newcomer(model):  # the dead process's slot came back
            owners = {m.rpartition("/")[0] for m in _leases(redis_url, model)}
            assert "host:1:dead" not in owners and "host:2:live" in owners
    live.close()


def test_a_thread_waiting_for_its_own_slot_wakes_when_a_call_ends_without_keeping(
    redis_url: str,
) -> None:
    # Without keeping (the reward server's gate), an ended call's report empties
    # the pool's lists at once; a waiter that watched their lengths slept through
    # the end until its one-second bound (`serve --redis`: 7-20 rollouts/s).
    gate = _gate(redis_url, keep_idle=0.0)
    pool = SlotPool(EndpointLimits("e", max_concurrency=1, requests_per_minute=None), keep=False)
    woken: list[bool] = []
    with pool.cond:
        pool.taken()
    waiter = threading.Thread(
        target=lambda: woken.append(gate._wait(pool, f"{PREFIX}:free", 5.0, own=True))
    )
    waiter.start()
    while True:
        with pool.cond:
            if pool.waiting:
                # the call holding the process's slot ends; its slot goes back
                sync = pool.end(
                    Permit("a", 100.0), Ended("a", 0, 5.0, -1, 0, -1, 0), now=1.0, give_back=False
                )
                break
        threading.Event().wait(0.001)
    waiter.join()
    assert sync is not None and sync.releases == ["a"]
    assert woken == [True]  # by the call's end, not by running out of time


def test_a_process_at_its_share_waits_for_its_own_slots_without_asking_redis(
    redis_url: str,
) -> None:
    """Two processes of four threads each on a window of four: each holds its
    share (two) and hands its slots from call to call. A thread that finds no
    kept slot while its process holds its share waits for one of the process's
    own slots; asking Redis, which can only say "the rest is others'", was most
    of the limiter's scripts on a window-bound fleet (one per call here). The
    acquire scripts are counted on their way to Redis (they still run)."""
    model = ModelConfig.parse("http://127.0.0.1:9/v1#atshare", max_concurrency=4)
    gates = [_gate(redis_url, keep_idle=0.2, max_wait=8.0) for _ in range(2)]
    asked = [0, 0]
    for which, gate in enumerate(gates):
        script = gate._acquire

        def counted(*args: object, _which: int = which, _script: object = script, **kw: object):  # type: ignore[no-untyped-def]
            asked[_which] += 1
            return _script(*args, **kw)  # type: ignore[operator]

        gate._acquire = counted  # type: ignore[assignment]
    calls, failures, peak = _back_to_back(gates, model, threads_per_gate=4)
    assert failures == [] and calls == [160, 160] and peak <= 4
    # Fresh slots: the first share and the odd one after a share change, not one
    # per call (160 calls per process). Measured: 6-40 asks, 88-149 before.
    assert asked[0] + asked[1] < 64, asked
