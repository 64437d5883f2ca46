"""The fleet's backend: one adaptive window and one set of budgets per model
endpoint, kept in Redis and shared by every thread of every worker process on
every machine.

Per endpoint: a sorted set of *leases* (one per call in flight, scored by when it
expires) holds the calls in flight, a hash holds the adaptive window
(:class:`~verifleet.limits.Window`'s fields), a sorted set of call start times
over the last minute caps requests per minute, and a sorted set of the calls'
start times with a hash of their tokens (and the window's running total) caps
tokens per minute. Taking a slot is one Lua script and giving it back is another
(:mod:`._redis_scripts`): it settles the call's tokens, sets a ``Retry-After``
pause and moves the window by the call's outcome, so every worker sees one
controller per endpoint. A lease that a dead worker never released expires
after ``lease_seconds`` (the request timeout plus a margin), and the next acquire
drops it.

A call that finds the window full blocks on a Redis list (``BLPOP``) that every
release pushes to, instead of polling: measured here, threads polling every
10-30 ms for a slot of a slow endpoint cost a worker 30-50 ms of CPU per unit.
The list is only a wake-up call (the lease set stays the truth), so a lost or
stale wake-up costs one more acquire attempt, and the wait is bounded anyway.
One thread per process and endpoint blocks on it at a time; the process's other
waiting threads take turns behind it (:meth:`RedisCallGate._wait_for_release`).
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import NamedTuple

import redis

from verifleet.schemas import ModelConfig

from ._base import EndpointGate, GateSlot
from ._policy import POLICY, AdaptivePolicy, EndpointLimits, Window
from ._protocol import NoCapacityError, Slot
from ._redis_scripts import ACQUIRE, RELEASE, WINDOW, WINDOW_STATE

__all__ = ["RedisCallGate", "Spend"]


class Spend(NamedTuple):
    """One call in an endpoint's tokens-per-minute window."""

    call: str
    start_ms: int  # Redis's clock
    tokens: int  # the estimate while in flight, the reported usage after


class _Turn:
    """Whose turn it is, among this process's threads waiting for one
    endpoint's window, to block on its wake-up list."""

    __slots__ = ("busy", "cond")

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.busy = False


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RedisCallGate(EndpointGate):
    """A :class:`~verifleet.limits.CallGate` backed by Redis: the fleet shares
    one adaptive window, one requests-per-minute and one tokens-per-minute
    budget, and one ``Retry-After`` pause per endpoint.

    Tokens per minute: a call reserves its estimate (``tokens``) as it takes its
    slot, waits while the tokens of the calls started in the last 60 s plus its
    own would exceed ``tokens_per_minute``, and its reservation becomes the
    usage it reports when it ends (see
    :meth:`~verifleet.limits.EndpointLimits.tokens_fit`). A call larger than the
    whole budget is let through alone once the window is empty instead of
    waiting forever. A call answered 429 used no tokens; any other failure keeps
    its estimate, since the provider may have done the work.

    Args:
        client: Redis client shared by the worker process.
        lease_seconds: How long a call may hold its slot before the slot is
            considered abandoned (request timeout plus a margin).
        max_wait: Seconds to wait for a slot before entering raises
            :class:`NoCapacityError` (the unit then records the error).
        prefix: Key prefix.
        sleep: Sleep between attempts while a minute's budget is spent.
        policy: The adaptive window's constants.

    Redis errors (unreachable, script errors) propagate from entering and from
    leaving the gate.
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        lease_seconds: float,
        max_wait: float,
        prefix: str = "vf",
        sleep: Callable[[float], None] = time.sleep,
        policy: AdaptivePolicy = POLICY,
    ) -> None:
        self._client = client
        self._lease_ms = int(lease_seconds * 1000)
        self._max_wait = max_wait
        self._prefix = prefix
        self._sleep = sleep
        self._policy = policy
        self._policy_args = [
            policy.initial,
            policy.backoff,
            policy.hold * 1000,
            policy.probe,
            policy.probe_gain,
            policy.latency_tolerance,
            policy.latency_floor * 1000,
            policy.smoothing,
            policy.drift,
        ]
        self._waiters: dict[str, _Turn] = {}
        self._waiters_lock = threading.Lock()
        self._acquire = client.register_script(ACQUIRE)
        self._release = client.register_script(RELEASE)
        self._window = client.register_script(WINDOW)

    def _keys(self, limits: EndpointLimits) -> dict[str, str]:
        base = f"{self._prefix}:limit:{limits.key}"
        names = ("leases", "starts", "window", "free", "spends", "spent", "pause")
        return {name: f"{base}:{name}" for name in names}

    def spends(self, model: ModelConfig) -> list[Spend]:
        """The calls of ``model``'s endpoint started in the last 60 s by Redis's
        clock, oldest first. Empty without a ``tokens_per_minute``.

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        limits = EndpointLimits.of(model)
        if limits is None or not limits.tokens_per_minute:
            return []
        keys = self._keys(limits)
        flat = self._window(keys=[keys["spends"], keys["spent"]])
        return [
            Spend(_text(flat[i]), int(float(flat[i + 1])), int(flat[i + 2]))
            for i in range(0, len(flat), 3)
        ]

    def window(self, model: ModelConfig) -> Window | None:
        """The fleet's window for ``model``'s endpoint as Redis holds it now
        (latencies in seconds, ``shrunk_at`` in Redis's clock, seconds); a fresh
        window when nothing was learned yet; None when no window limits it.

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        limits = EndpointLimits.of(model)
        if limits is None or not limits.ceiling or not limits.adaptive:
            return None
        raw = self._client.hmget(self._keys(limits)["window"], list(WINDOW_STATE))
        size, peak, base, smooth, shrunk = (None if v is None else float(v) for v in raw)
        window = Window()
        if size is not None:
            window.size = size
        window.peak = peak
        window.base = None if base is None else base / 1000
        window.smooth = None if smooth is None else smooth / 1000
        if shrunk is not None:
            window.shrunk_at = shrunk / 1000
        return window

    def in_flight(self, model: ModelConfig) -> int:
        """Calls of ``model``'s endpoint holding a lease now, fleet-wide.

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        limits = EndpointLimits.of(model)
        if limits is None:
            return 0
        return int(self._client.zcard(self._keys(limits)["leases"]))

    def _wait_for_release(self, free_key: str, left: float) -> None:
        """Wait (at most ``left`` seconds) until a call of the endpoint whose
        wake-up list is ``free_key`` may have ended somewhere in the fleet.

        One thread of this process at a time blocks on the list (``BLPOP``, at
        most 1 s, in case a wake-up was missed); the others wait here until it
        is their turn. With every waiting thread on the list, each one timed out
        and tried again every second: with 128 threads per worker and a full
        window that was most of a worker's Redis round trips
        (``bench/throughput.py --defaults --round-trips``). A wake-up then
        reaches one thread per process, which tries to take the slot while the
        next one takes over the list.
        """
        with self._waiters_lock:
            turn = self._waiters.get(free_key)
            if turn is None:
                turn = self._waiters[free_key] = _Turn()
        deadline = time.monotonic() + left
        with turn.cond:
            while turn.busy:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                turn.cond.wait(timeout=remaining)
            turn.busy = True
        try:
            self._client.blpop([free_key], timeout=min(1.0, max(left, 0.01)))
        finally:
            with turn.cond:
                turn.busy = False
                turn.cond.notify()

    @contextlib.contextmanager
    def _slot(self, limits: EndpointLimits, tokens: int) -> Iterator[Slot]:
        keys = self._keys(limits)
        slot = GateSlot(uuid.uuid4().hex)
        cap = limits.ceiling
        tpm = limits.tokens_per_minute or 0
        adaptive = 1 if limits.adaptive else 0
        args: list[str | int | float] = [
            slot.call,
            self._lease_ms,
            cap,
            limits.requests_per_minute or 0,
            tpm,
            tokens,
            adaptive,
            self._policy.initial,
        ]
        acquire_keys = [keys[k] for k in ("leases", "starts", "window", "spends", "spent", "pause")]
        give_up = time.monotonic() + self._max_wait
        while True:
            wait_ms = int(self._acquire(keys=acquire_keys, args=args))
            if wait_ms == 0:
                break
            left = give_up - time.monotonic()
            if left <= 0:
                raise NoCapacityError(
                    f"no capacity on the endpoint within {self._max_wait:.0f}s "
                    f"(window {cap or '-'} at most, {limits.requests_per_minute or '-'} "
                    f"requests/min, {tpm or '-'} tokens/min, this call {tokens} tokens)"
                )
            if wait_ms < 0:  # window full: until a release (or 1 s, in case it was missed)
                self._wait_for_release(keys["free"], left)
            else:  # paused, or the minute's budget is spent: until it may start
                self._sleep(min(wait_ms / 1000, 0.25, left) * (0.5 + random.random()))
        started = time.monotonic()
        outcome = 0  # success, unless the call leaves with an exception
        try:
            yield slot
        except BaseException:
            outcome = 2
            raise
        finally:
            if slot.pushed_back:
                outcome = 1
            # -1 keeps the estimate: the provider said nothing about this call.
            used = 0 if slot.pushed_back else (slot.used if slot.used is not None else -1)
            pause_ms = int(slot.pause * 1000)
            if cap or (tpm and used >= 0) or pause_ms:
                self._release(
                    keys=[keys[k] for k in ("leases", "window", "free", "spent", "pause")],
                    args=[
                        slot.call,
                        cap,
                        outcome,
                        (time.monotonic() - started) * 1000,
                        used,
                        pause_ms,
                        adaptive,
                        *self._policy_args,
                        self._lease_ms,
                    ],
                )
