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
release pushes to, instead of polling (which costs a worker CPU for every waiting
thread). The list is only a wake-up call (the lease set stays the truth), so a
lost or stale wake-up costs one more acquire attempt, and the wait is bounded.
One thread per process and endpoint blocks on it at a time; the process's other
waiting threads take turns behind it (:meth:`RedisCallGate._wait_for_release`).

A worker process's gate keeps a finished call's slot for its next call to the
same endpoint (``keep_idle``; :mod:`._pool` says when it must not) and reports
what its calls told it to the window in one script for many calls: the fleet's
Redis then runs about one script per ``keep_idle / 2`` seconds and process
instead of two per model call. A process keeps at most its fair share of the
window, and a slot nobody in the process used for ``keep_idle`` goes back.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import math
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import redis

from verifleet.schemas import ModelConfig

from ._base import EndpointGate, GateSlot
from ._policy import POLICY, AdaptivePolicy, EndpointLimits, Window
from ._pool import Ended, Permit, SlotPool, Sync, flat_args, monotonic_ms, redis_ms
from ._protocol import NoCapacityError, Slot
from ._redis_scripts import ACQUIRE, REPORT, WINDOW, WINDOW_STATE

__all__ = ["RedisCallGate", "Spend", "lease_owner"]

log = logging.getLogger(__name__)


def lease_owner(member: bytes | str) -> str | None:
    """The worker process (its liveness owner id) that holds the lease
    ``member``, None for a lease taken without one."""
    owner, sep, _ = _text(member).rpartition("/")
    return owner if sep else None


class Spend(NamedTuple):
    """One call in an endpoint's tokens-per-minute window."""

    call: str
    start_ms: int  # Redis's clock
    tokens: int  # the estimate while in flight, the reported usage after


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
        keep_idle: Seconds a finished call's slot stays with this process for
            its next call to the endpoint, without a round trip each way
            (:mod:`._pool`); 0 gives every slot back as its call ends.
            Endpoints with requests or tokens per minute never keep slots.
            A gate that keeps slots runs a reporter thread; :meth:`close`
            gives its slots back (also run at interpreter exit).
        owner: The worker process's liveness owner id, written into its
            leases so that the reaper can return them when the process dies
            (:func:`~verifleet.limits.reclaim_leases`).

    Redis errors (unreachable, script errors) propagate from entering and from
    leaving the gate; the reporter thread logs them and sends again later.
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
        keep_idle: float = 0.0,
        owner: str | None = None,
    ) -> None:
        self._client = client
        self._keep_idle = max(0.0, keep_idle)
        self._member_prefix = f"{owner}/" if owner else ""
        self._owner = owner
        # This process's name in the endpoints' active and starving sets.
        self._token = owner or uuid.uuid4().hex
        self._pools: dict[EndpointLimits, SlotPool] = {}
        self._pools_lock = threading.Lock()
        self._reporter: threading.Thread | None = None
        self._closed = threading.Event()
        # Redis's clock minus this process's monotonic clock (ms), the largest
        # seen: every sample is low by its reply's travel time, so the largest
        # is the closest. A reused slot's call start is timed with it.
        self._offset_ms = -math.inf
        self._lease_ms = int(lease_seconds * 1000)
        self._max_wait = max_wait
        self._prefix = prefix
        self._sleep = sleep
        self._policy = policy
        # After the window's start, which depends on the endpoint's limits.
        self._policy_args = [
            policy.backoff,
            policy.hold * 1000,
            policy.probe,
            policy.probe_gain,
            policy.latency_tolerance,
            policy.latency_floor * 1000,
            policy.smoothing,
            policy.drift,
        ]
        self._acquire = client.register_script(ACQUIRE)
        self._report = client.register_script(REPORT)
        self._window = client.register_script(WINDOW)

    def _keys(self, limits: EndpointLimits) -> dict[str, str]:
        base = f"{self._prefix}:limit:{limits.key}"
        names = [
            *("leases", "starts", "window", "free", "spends", "spent", "pause"),
            *("active", "starving"),
        ]
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
        size, peak, base, smooth, shrunk, unheld = (None if v is None else float(v) for v in raw)
        window = Window(size=self._policy.start(limits))
        if size is not None:
            window.size = size
        window.peak = peak
        window.base = None if base is None else base / 1000
        window.smooth = None if smooth is None else smooth / 1000
        if shrunk is not None:
            window.shrunk_at = shrunk / 1000
        window.unheld = unheld or 0.0
        return window

    def in_flight(self, model: ModelConfig) -> int:
        """Slots (leases) of ``model``'s endpoint held now, fleet-wide: the calls
        in flight, and the slots worker processes keep for their next calls
        (``keep_idle``); never fewer than the calls in flight.

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        limits = EndpointLimits.of(model)
        if limits is None:
            return 0
        return int(self._client.zcard(self._keys(limits)["leases"]))

    def _wait(self, pool: SlotPool, free_key: str, left: float, *, own: bool) -> bool:
        """Wait (at most ``left`` seconds, and 1 s at most in case a wake-up was
        missed) until a slot may be had: one of this process's calls to the
        endpoint ended (its slot may be kept for the waiter), Redis gave the
        process a larger share, or, unless
        ``own`` (the process holds its share: only its own slots are for it),
        a call ended somewhere in the fleet. Returns False when the time ran
        out first (True also when woken from the fleet's list).

        One thread of this process at a time blocks on the endpoint's wake-up
        list (``BLPOP``); the others wait for their turn or a kept slot. With
        every waiting thread on the list, each one timed out and tried again
        every second: with 128 threads per worker and a full window that was
        most of a worker's Redis round trips (``bench/throughput.py --defaults
        --round-trips``). A wake-up then reaches one thread per process, which
        tries to take the slot while the next one takes over the list.
        """
        deadline = time.monotonic() + min(left, 1.0)
        with pool.cond:
            # Counted, not the lists' lengths: a call that ends without keeping
            # its slot empties them at once (the slot is sent back), which
            # left every waiter asleep for its whole second.
            ends, share = pool.ends, pool.share
            pool.waiting += 1
            try:
                while own or pool.turn:
                    if pool.idle or pool.ends != ends or pool.share > share:
                        return True
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    pool.cond.wait(timeout=remaining)
                pool.turn = True
            finally:
                pool.waiting -= 1
        try:
            timeout = max(deadline - time.monotonic(), 0.01)
            return self._client.blpop([free_key], timeout=timeout) is not None
        finally:
            with pool.cond:
                pool.turn = False
                pool.cond.notify()

    def _pool(self, limits: EndpointLimits) -> SlotPool:
        with self._pools_lock:
            pool = self._pools.get(limits)
            if pool is not None:
                return pool
            keep = self._keep_idle > 0 and bool(limits.ceiling)
            keep = keep and not limits.requests_per_minute and not limits.tokens_per_minute
            pool = self._pools[limits] = SlotPool(limits, keep)
            if keep and self._reporter is None:
                self._reporter = threading.Thread(
                    target=self._report_kept, name="verifleet-limits", daemon=True
                )
                self._reporter.start()
                atexit.register(self.close)
        if self._owner:
            # Where the reaper looks for a dead process's leases (once per endpoint).
            self._client.sadd(f"{self._prefix}:limit:endpoints", limits.key)
        return pool

    def _heard(self, reply: Sequence[Any], at: float) -> None:
        """Keep the clock offset from a reply carrying Redis's TIME at
        ``reply[1:3]``, read at ``at`` (monotonic ms)."""
        offset = redis_ms(reply[1], reply[2]) - at
        if offset > self._offset_ms:
            self._offset_ms = offset

    def _send(self, pool: SlotPool, sync: Sync) -> None:
        """Send ``sync`` (see :data:`REPORT`) and keep what Redis said.

        Raises:
            redis.RedisError: Redis is unreachable; the slots go with the next report.
        """
        limits = pool.limits
        keys = self._keys(limits)
        try:
            reply = self._report(
                keys=[keys[k] for k in ("leases", "window", "free", "spent", "pause", "active")],
                args=[
                    limits.ceiling,
                    1 if limits.adaptive else 0,
                    self._policy.start(limits),
                    *self._policy_args,
                    self._lease_ms,
                    sync.held,
                    self._token,
                    len(sync.ended),
                    *flat_args(sync.ended),
                    *sync.releases,
                ],
            )
        except redis.RedisError:
            with pool.cond:
                pool.unsent(sync)
            raise
        at = monotonic_ms()
        self._heard(reply, at)
        with pool.cond:
            pool.heard(now=at / 1000, paused_ms=int(reply[3]), share=int(reply[4]))

    def _report_kept(self) -> None:
        """The reporter thread: every ``keep_idle / 2`` s, each pool's ended calls
        and the slots idle for ``keep_idle`` go to Redis in one script."""
        while not self._closed.wait(self._keep_idle / 2):
            self.flush(idle_for=self._keep_idle)

    def flush(self, *, idle_for: float = 0.0) -> None:
        """Send every pool's ended calls now and give back its slots idle for
        ``idle_for`` seconds or more (all of them by default). Redis errors are
        logged: the slots go with the next report (or expire with their lease)."""
        with self._pools_lock:
            pools = list(self._pools.values())
        for pool in pools:
            now = time.monotonic()
            with pool.cond:
                sync = pool.take(now, idle_for=idle_for)
            if not sync:
                continue
            try:
                self._send(pool, sync)
            except redis.RedisError as exc:
                log.warning("endpoint limits: redis unavailable (%s); reporting later", exc)

    def close(self) -> None:
        """Stop the reporter thread and give back every slot this process keeps
        (a stopping worker leaves no slot idle in the fleet's window). Never raises."""
        self._closed.set()
        self.flush()

    def _take(
        self, pool: SlotPool, keys: dict[str, str], tokens: int, member: str
    ) -> tuple[Permit, bool]:
        """A slot for one call: one this process kept, or a fresh one from
        Redis, waiting as long as ``max_wait`` allows. Returns it and whether
        it is fresh.

        Raises:
            NoCapacityError: no room within ``max_wait``.
            redis.RedisError: Redis is unreachable.
        """
        limits = pool.limits
        cap = limits.ceiling
        tpm = limits.tokens_per_minute or 0
        names = ("leases", "starts", "window", "spends", "spent", "pause", "active", "starving")
        acquire_keys = [keys[k] for k in names]
        give_up = time.monotonic() + self._max_wait
        while True:
            with pool.cond:
                now = time.monotonic()
                permit = pool.reuse(now)
                held = pool.held() - len(pool.releases)
                own_only = permit is None and pool.at_share(now)
            if permit is not None:
                return permit, False
            if own_only:  # Redis would say "the rest is others'": wait for an own slot
                self._wait(pool, keys["free"], self._left(give_up, limits, tokens), own=True)
                continue
            if pool.releases:
                self.flush_pool(pool)  # slots beyond the share go back before asking
            args: list[str | int | float] = [
                member,
                self._lease_ms,
                cap,
                limits.requests_per_minute or 0,
                tpm,
                tokens,
                1 if limits.adaptive else 0,
                self._policy.start(limits),
                self._token,
                held,
            ]
            reply = self._acquire(keys=acquire_keys, args=args)
            code = int(reply[0])
            if code == 0:
                at = monotonic_ms()
                self._heard(reply[1:], at)  # {0, 0, TIME s, TIME us, share}
                with pool.cond:
                    pool.taken()
                    pool.heard(now=at / 1000, paused_ms=0, share=int(reply[4]))
                return Permit(member, time.monotonic() + self._lease_ms / 2000), True
            left = self._left(give_up, limits, tokens)
            if code < 0:  # full, or the rest is others': until a call ends
                self._wait(pool, keys["free"], left, own=code == -2)
            else:  # paused, or the minute's budget is spent: until it may start
                wait_ms = int(reply[1])
                self._sleep(min(wait_ms / 1000, 0.25, left) * (0.5 + random.random()))

    def _left(self, give_up: float, limits: EndpointLimits, tokens: int) -> float:
        """Seconds left until ``give_up``.

        Raises:
            NoCapacityError: ``give_up`` has passed (the call found no room in time).
        """
        left = give_up - time.monotonic()
        if left <= 0:
            raise NoCapacityError(
                f"no capacity on the endpoint within {self._max_wait:.0f}s "
                f"(window {limits.ceiling or '-'} at most, {limits.requests_per_minute or '-'} "
                f"requests/min, {limits.tokens_per_minute or '-'} tokens/min, "
                f"this call {tokens} tokens)"
            )
        return left

    @contextlib.contextmanager
    def _slot(self, limits: EndpointLimits, tokens: int) -> Iterator[Slot]:
        pool = self._pool(limits)
        permit, fresh = self._take(
            pool, self._keys(limits), tokens, f"{self._member_prefix}{uuid.uuid4().hex}"
        )
        slot = GateSlot(permit.member)
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
            tpm = limits.tokens_per_minute or 0
            # -1 keeps the estimate: the provider said nothing about this call.
            used = 0 if slot.pushed_back else (slot.used if slot.used is not None else -1)
            pause_ms = int(slot.pause * 1000)
            now = time.monotonic()
            with pool.cond:
                ended = Ended(
                    slot.call,
                    outcome,
                    (now - started) * 1000,
                    used if tpm else -1,
                    pause_ms,
                    # a fresh slot's call started when its lease was taken (exact)
                    -1 if fresh else started * 1000 + self._offset_ms,
                    pool.busy,
                )
                sync = pool.end(permit, ended, now=now, give_back=outcome == 1 or pause_ms > 0)
            if sync is not None and (limits.ceiling or (tpm and used >= 0) or pause_ms):
                self._send(pool, sync)

    def flush_pool(self, pool: SlotPool) -> None:
        """Give back ``pool``'s kept slots and send its ended calls now.

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        with pool.cond:
            if not pool.idle and not pool.releases:
                return
            sync = pool.take(time.monotonic(), idle_for=0.0)
        if sync:
            self._send(pool, sync)
