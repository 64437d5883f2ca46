"""Endpoint slots leased to a worker process in batches, and handed to its
threads without a Redis round trip.

The Redis gate took a slot with one Lua script and gave it back with another:
four scripts per unit of two model calls, most of what a unit cost the Redis
server (``bench/redis_cost.py``). A process now holds a *lease* of several slots
of an endpoint (counted as taken fleet-wide, so the window is never exceeded)
and its threads take and give back slots locally. One script (``LEASE``) renews
the lease, now and then:

- when a thread finds every held slot busy (it asks for as many slots as the
  process's threads then want, so a burst of threads costs one round trip);
- every ``sync_interval`` seconds while calls end, carrying the outcomes of the
  calls since the last one (they move the shared adaptive window in the order
  they ended, as one script per call did) and giving back the slots that went
  unused meanwhile;
- at once after a 429 (the window's decrease and a ``Retry-After`` pause must
  reach the fleet), when the process holds more slots than it may keep (the
  window shrank, or another process is waiting: see the fair share in
  ``LEASE``), and when its last call ends (an idle process holds nothing).

What that costs in agreement: another process's decrease or pause reaches this
one's threads at its next renewal, within ``sync_interval``; the calls in
flight used by the window's rules count this process's calls exactly and the
others' as the slots they hold. A process that dies keeps its slots until its
lease ends (``lease_seconds``), as a dead process's calls did before.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Lease", "LeaseReply", "SlotPool"]


@dataclass(frozen=True)
class LeaseReply:
    """What one renewal of the lease answered.

    Attributes:
        held: Slots the process holds now (never fewer than its calls in flight).
        allowed: Slots it may use (below ``held`` while it must give some back).
        shrunk: The window's last decrease as Redis recorded it ('' for none).
        pause: Seconds the endpoint stays paused (0: not paused).
    """

    held: int
    allowed: int
    shrunk: str
    pause: float


@dataclass(frozen=True)
class Lease:
    """What a renewal sends: the slots wanted, the calls in flight, how many
    more it would take if spare, and the outcomes ``(outcome, latency ms,
    calls in flight, known decrease, pause ms)`` of the calls that ended since
    the last renewal."""

    want: int
    busy: int
    extra: int
    outcomes: list[tuple[int, float, int, str, int]]


class SlotPool:
    """One process's slots of one endpoint.

    Args:
        renew: Sends a :class:`Lease` to Redis and returns the reply (raises
            ``redis.RedisError`` when Redis is unreachable).
        wait_for_release: Blocks at most the given seconds until a slot may
            have been given back somewhere in the fleet.
        sync_interval: Seconds between two renewals while calls end.
        lease_seconds: How long a lease lasts unrenewed; a thread taking a slot
            renews it first when a tenth of it has passed, so a call keeps its
            slot for at least 0.9 x ``lease_seconds`` (a call of its own held
            its lease for ``lease_seconds``: keep it above the request timeout
            plus a tenth).
        clock: Monotonic seconds.
    """

    def __init__(
        self,
        renew: Callable[[Lease], LeaseReply],
        wait_for_release: Callable[[float], None],
        *,
        sync_interval: float,
        lease_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._renew = renew
        self._wait_for_release = wait_for_release
        self._interval = sync_interval
        self._refresh = lease_seconds / 10
        self._clock = clock
        self._cond = threading.Condition()
        self.held = 0
        self.allowed = 0
        self.busy = 0
        self.waiting = 0
        self.shrunk = ""
        self.paused_until = float("-inf")
        self._demand = 0  # the most slots wanted at once since the last renewal
        self._outcomes: list[tuple[int, float, int, str, int]] = []
        self._last = float("-inf")
        self._renewing = False
        self._again = False
        self._fetching = False
        self._starved = False  # the last renewal gave fewer slots than wanted
        self._sent_busy: int | None = None  # the calls in flight a renewal on its way reported

    def enter(self, give_up: float) -> str | None:
        """Take a slot, waiting until ``give_up`` (monotonic) at most.

        Returns:
            The window's last decrease this process knew of as the call was
            admitted; None when no slot came in time (the caller raises).

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        with self._cond:
            self.waiting += 1
            try:
                while True:
                    now = self._clock()
                    fresh = now - self._last < self._refresh  # else renew before use
                    usable = self.allowed
                    if self._sent_busy is not None:
                        # A renewal on its way makes the lease max(its calls in
                        # flight, what Redis allows): a slot taken beyond those
                        # calls now might not be counted in Redis.
                        usable = min(usable, self._sent_busy)
                    if now >= self.paused_until and self.busy < usable and fresh:
                        self.busy += 1
                        self._demand = max(self._demand, self.busy + self.waiting - 1)
                        return self.shrunk
                    left = give_up - now
                    if left <= 0:
                        return None
                    if now < self.paused_until:
                        self._cond.wait(min(self.paused_until - now, 0.25, left))
                    elif self._fetching:
                        self._cond.wait(min(left, 1.0))
                    elif self._starved and self.busy and now - self._last < self._interval:
                        # The fleet had no slot to spare a moment ago: this
                        # process's own calls ending (or the next renewal, as
                        # they end) bring one sooner than asking again.
                        self._cond.wait(min(left, self._interval - (now - self._last)))
                    else:
                        self._fetch(left)
            finally:
                self.waiting -= 1

    def _fetch(self, left: float) -> None:
        """Renew the lease asking for what the waiting threads want; when no
        slot came, wait for one to be given back somewhere (called with the
        lock held; released meanwhile)."""
        self._fetching = True
        try:
            self._demand = max(self._demand, self.busy + self.waiting)
            self._cond.release()
            try:
                renewed = self.sync()
                with self._cond:
                    if not renewed:  # a renewal on its way answers soon, and wakes us
                        self._cond.wait(min(left, 0.05))
                        return
                    # Only a process with no call of its own to end waits for
                    # one to end elsewhere.
                    starved = (
                        self.busy == 0
                        and self.busy >= self.allowed
                        and self._clock() >= self.paused_until
                    )
                if starved:
                    self._wait_for_release(min(1.0, max(left, 0.01)))
            finally:
                self._cond.acquire()
        finally:
            self._fetching = False
            self._cond.notify_all()

    def leave(self, outcome: int, latency_ms: float, known: str, pause_ms: int) -> None:
        """A call ended: its slot goes to a waiting thread, or stays held until
        the next renewal, which carries the outcome (0 success, 1 pushback, 2
        another failure: it moves nothing and is not sent)."""
        with self._cond:
            if outcome != 2 or pause_ms:
                self._outcomes.append((outcome, latency_ms, self.busy, known, pause_ms))
            self.busy -= 1
            if self.busy < self.allowed:
                self._cond.notify()
            now = self._clock()
            due = (
                outcome == 1
                or pause_ms > 0
                or self.held > self.allowed
                or (self.busy == 0 and self.waiting == 0)
                or len(self._outcomes) >= 256
                or (self._outcomes and now - self._last >= self._interval)
            )
        if due:
            self.sync()

    def sync(self) -> bool:
        """Renew the lease now with the outcomes so far; a renewal already on
        its way is followed by one more instead (and this returns False).

        Raises:
            redis.RedisError: Redis is unreachable (the outcomes are kept for
                the next renewal).
        """
        with self._cond:
            if self._renewing:
                self._again = True
                return False
            self._renewing = True
        try:
            while True:
                with self._cond:
                    self._again = False
                    outcomes, self._outcomes = self._outcomes, []
                    want = max(self._demand, self.busy + self.waiting)
                    if self.waiting == 0 and self.busy == 0:
                        want = 0  # idle: give every slot back
                    # A little more than wanted at the busiest moment since the
                    # last renewal, if spare: threads arrive one by one.
                    lease = Lease(want, self.busy, max(1, want // 4) if want else 0, outcomes)
                    self._sent_busy = self.busy
                try:
                    reply = self._renew(lease)
                except BaseException:
                    with self._cond:
                        self._outcomes[:0] = outcomes
                        self._sent_busy = None
                        self._cond.notify_all()
                    raise
                with self._cond:
                    self._sent_busy = None
                    self.held, self.allowed, self.shrunk = reply.held, reply.allowed, reply.shrunk
                    self._starved = reply.allowed < lease.want
                    now = self._clock()
                    self._last = now
                    self.paused_until = now + reply.pause if reply.pause > 0 else float("-inf")
                    self._demand = self.busy + self.waiting
                    self._cond.notify_all()
                    if not self._again:
                        return True
        finally:
            with self._cond:
                self._renewing = False
