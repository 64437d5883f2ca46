"""What one worker process holds of one endpoint's slots in the fleet's Redis
window: the slots its calls use now, the slots it keeps for its next calls, and
what the ended calls told it that Redis has not heard yet.

Why keep a slot: a call that takes its slot with one Lua script and gives it
back with another costs the fleet's one Redis core two scripts per model call,
most of what a unit costs it. A process's threads make
calls to the same endpoint one after the other, so a slot given up by one call
is usually wanted by the next within milliseconds. :class:`SlotPool` keeps a
finished call's slot (its lease stays in Redis) for ``keep_idle`` seconds, and
a call of the process that starts meanwhile takes it without a round trip. What
the ended calls report (latency, outcome) goes to Redis in one script for many
calls, every ``keep_idle / 2`` seconds, where it moves the window exactly as
one script per call did, call by call.

A process keeps slots only within its *share* of the window: the window
divided by the processes that asked for or reported on the endpoint in the last
two seconds (Redis counts them; every reply carries the share). Within its
share a process hands a slot from a call that ended straight to one of its
threads waiting for the endpoint; beyond it, every slot goes back as its call
ends and is taken again per call, as without keeping. The share is what makes
keeping fair: a process below its share that finds the window full is recorded
as *starving*, and while one is, a process at its share takes no free slot
(it waits for its own), so each freed slot goes to the starving one; a process
above its share (others became active, the window shrank) gives slots back as
its calls end. When the window is smaller than the number of processes, the
share is 0 and nobody keeps anything. Also:

- a slot idle for ``keep_idle`` goes back (the gate's reporter thread);
- nothing is kept while the endpoint is paused (``Retry-After``), and a 429
  gives its slot back at once;
- a slot older than half its lease is given back rather than reused, so every
  lease in Redis is fresh and a dead process's leases expire as before (and the
  reaper returns them sooner: :func:`~verifleet.limits.reclaim_leases`).

A process learns of a pause, a decrease or a smaller share with its next report,
within ``keep_idle / 2`` seconds; until then it may start calls on slots it
already holds (never more calls than it holds slots, so ``max_concurrency``
holds fleet-wide at every moment).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from ._policy import EndpointLimits

__all__ = ["SHARE_FRESH", "Ended", "Permit", "SlotPool", "Sync"]

#: Seconds a share heard from Redis is trusted to say that a fresh slot would be
#: refused (:meth:`SlotPool.at_share`).
SHARE_FRESH = 1.0


@dataclass
class Permit:
    """One slot (lease) this process holds.

    Attributes:
        member: Its member in the endpoint's lease set.
        reuse_until: Monotonic time after which it is given back, not reused
            (half the lease: the lease in Redis never runs out while in use).
        fresh: True until a first call used it: that call's start is the
            lease's own (exact, by Redis's clock).
        idle_since: When its last call ended (monotonic).
    """

    member: str
    reuse_until: float
    fresh: bool = True
    idle_since: float = 0.0


@dataclass(frozen=True)
class Ended:
    """What one ended call reports (one group of :data:`REPORT`'s arguments)."""

    member: str
    outcome: int
    latency_ms: float
    used: int
    pause_ms: int
    started_ms: float
    busy: int

    def args(self) -> list[str | int | float]:
        """The call's arguments of the report script."""
        return [
            self.member,
            self.outcome,
            self.latency_ms,
            self.used,
            self.pause_ms,
            self.started_ms,
            self.busy,
        ]


@dataclass
class Sync:
    """One report to send: the calls that ended and the slots given back."""

    ended: list[Ended]
    releases: list[str]
    held: int

    def __bool__(self) -> bool:
        return bool(self.ended or self.releases)


@dataclass
class SlotPool:
    """This process's slots of one endpoint (calls of the same limits only: a
    slot taken under a higher ``max_concurrency`` never serves a call of a
    lower one). Every method is called with :attr:`cond` held.

    Attributes:
        limits: The limits the slots were taken under.
        keep: Whether finished calls' slots are kept (``keep_idle`` > 0 and no
            requests or tokens per minute, which count each call's start).
        share: The slots this process may keep, as Redis last said.
        waiting: Threads of this process waiting for a slot.
        turn: Whether one of them blocks on the endpoint's wake-up list now.
        ends: Calls of this pool that ended so far (what a waiting thread
            watches: the ended calls' list is emptied whenever it is sent).
        heard_at: When Redis last said the share (monotonic seconds).
    """

    limits: EndpointLimits
    keep: bool
    cond: threading.Condition = field(default_factory=threading.Condition)
    idle: list[Permit] = field(default_factory=list)
    busy: int = 0
    ended: list[Ended] = field(default_factory=list)
    releases: list[str] = field(default_factory=list)
    paused_until: float = 0.0
    share: int = 0
    waiting: int = 0
    turn: bool = False
    ends: int = 0
    heard_at: float = -math.inf

    def held(self) -> int:
        """The slots of this pool still in the lease set."""
        return self.busy + len(self.idle) + len(self.releases)

    def keeps(self, now: float) -> bool:
        """Whether slots may be kept for, and taken by, the next calls now."""
        return self.keep and self.share > 0 and now >= self.paused_until

    def _shed(self, now: float) -> None:
        """Queue for release the kept slots beyond the share (all of them while
        the pool keeps nothing) and those too old to reuse."""
        if not self.keeps(now):
            self.releases += [p.member for p in self.idle]
            self.idle = []
            return
        while self.idle and self.busy + len(self.idle) > self.share:
            self.releases.append(self.idle.pop(0).member)
        old = [p for p in self.idle if p.reuse_until <= now]
        if old:
            self.idle = [p for p in self.idle if p.reuse_until > now]
            self.releases += [p.member for p in old]

    def reuse(self, now: float) -> Permit | None:
        """A kept slot for a call starting now (the most recently used one), or
        None."""
        self._shed(now)
        if not self.idle:
            return None
        self.busy += 1
        return self.idle.pop()

    def taken(self) -> None:
        """A call holds a slot fresh from Redis."""
        self.busy += 1

    def end(self, permit: Permit, ended: Ended, *, now: float, give_back: bool) -> Sync | None:
        """A call on ``permit`` ended. Its slot is kept (None: nothing to send
        now; a waiting thread of the process is woken to take it) unless
        ``give_back``, the pool keeps nothing now, or it holds more than its
        share; then what to send at once: every ended call not yet reported
        and the slot."""
        self.busy -= 1
        self.ends += 1
        self.ended.append(ended)
        self.cond.notify()
        # the slots that stay (pending releases go) must leave room for this one
        keep = self.keeps(now) and self.busy + len(self.idle) < self.share
        keep = keep and permit.reuse_until > now
        if keep and not give_back:
            permit.fresh = False
            permit.idle_since = now
            self.idle.append(permit)
            return None
        self.releases.append(permit.member)
        return self.take(now, idle_for=math.inf)

    def take(self, now: float, *, idle_for: float) -> Sync:
        """What to send now: the ended calls, the slots queued for release, and
        the kept slots idle for ``idle_for`` seconds or more. ``held`` is
        counted before the release."""
        self._shed(now)
        held = self.held()
        stale = [p for p in self.idle if now - p.idle_since >= idle_for]
        self.idle = [p for p in self.idle if now - p.idle_since < idle_for]
        sync = Sync(self.ended, [*self.releases, *(p.member for p in stale)], held)
        self.ended, self.releases = [], []
        return sync

    def unsent(self, sync: Sync) -> None:
        """``sync`` did not reach Redis: its slots are released with the next
        report (what the calls said is dropped: the window misses a few
        samples, which is all)."""
        self.releases.extend(sync.releases)

    def heard(self, *, now: float, paused_ms: int, share: int) -> None:
        """What a reply of Redis said: the endpoint's pause and this process's
        share. A larger share wakes the threads waiting for one of the
        process's own slots: they may ask Redis for a fresh one again."""
        self.paused_until = now + max(0, paused_ms) / 1000
        if share > self.share:
            with self.cond:  # a reentrant lock: callers hold it already
                self.cond.notify_all()
        self.share = share
        self.heard_at = now

    def at_share(self, now: float) -> bool:
        """Whether a call that found no kept slot should wait for one of the
        process's own slots without asking Redis: the process keeps slots and
        holds its whole share, as Redis said within the last
        :data:`SHARE_FRESH` seconds, so Redis would refuse a fresh slot (the
        rest of the window is others'). Asking anyway was most of the limiter's
        scripts on a window-bound fleet: a thread woken by a call of its
        process that ended found the kept slot taken by another thread and
        asked Redis, which said no. The share is
        heard again with every report (each ``keep_idle / 2`` seconds while
        calls end) and with every fresh slot."""
        held = self.held() - len(self.releases)
        fresh = now - self.heard_at < SHARE_FRESH
        return self.keeps(now) and fresh and held >= self.share


def redis_ms(seconds: bytes | str | int, micros: bytes | str | int) -> float:
    """Redis's ``TIME`` reply in milliseconds."""
    return int(seconds) * 1000 + int(micros) / 1000


def monotonic_ms() -> float:
    """This process's monotonic clock in milliseconds."""
    return time.monotonic() * 1000


def flat_args(ended: Sequence[Ended]) -> list[str | int | float]:
    """The ended calls as the report script's arguments."""
    out: list[str | int | float] = []
    for call in ended:
        out += call.args()
    return out
