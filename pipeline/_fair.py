"""A fixed number of places shared fairly between callers, on one event loop.

The reward service hands out two kinds of places: in-flight scoring slots
(``--max-inflight``) and sandbox executors. Handed out first come, first served,
a caller that opens many connections takes them all, and another caller's
requests wait behind every one of its queued requests. :class:`FairShare` gives
each *active* caller at most ``max(1, size // active callers)`` places, and
hands a freed place round-robin to the callers waiting for one, so a caller
waits for at most one of another caller's calls to end, never behind its queue.
It is work-conserving: a caller alone (NeMo Gym's one agent process, a trainer)
may take every place.

A caller counts as active while it holds or waits for a place, and for
:data:`LINGER` seconds after it gave its last one back: a caller that sends its
requests one after another has a place ready for its next, instead of finding
every place taken again by another caller's queue.

Who the caller is, is the service's business (:data:`CALLER`, set per request);
work with no caller set (the local runner, the fleet's workers) is all one
caller, which is the first come, first served order these places had before.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Hashable
from contextvars import ContextVar

__all__ = ["CALLER", "LINGER", "FairShare"]

#: The caller the current request's work is done for (an opaque key: a keyed
#: hash or an address, never a secret); None: nobody in particular.
CALLER: ContextVar[Hashable | None] = ContextVar("verifleet_caller", default=None)

#: Seconds a caller still counts as active after it gave its last place back.
LINGER = 2.0


class FairShare:
    """``size`` places shared between callers (one event loop: no lock).

    Args:
        size: Places in all.
        fair: False: every caller is one (first come, first served, any caller
            may take every place), the behaviour before per-caller shares.
        linger: Seconds a caller counts as active after its last place.

    Raises:
        ValueError: ``size`` is not positive or ``linger`` negative.
    """

    def __init__(self, size: int, *, fair: bool = True, linger: float = LINGER) -> None:
        if size <= 0 or linger < 0:
            raise ValueError("size must be positive and linger >= 0")
        self.size = size
        self.fair = fair
        self.linger = linger
        self.used = 0
        self._held: dict[Hashable | None, int] = {}
        self._waiting: dict[Hashable | None, int] = {}
        # Places held plus requests waiting, by caller (its keys: busy callers).
        self._busy: dict[Hashable | None, int] = {}
        self._queued = 0
        # Waiting callers in round-robin order (a dict keeps insertion order).
        self._queues: dict[Hashable | None, collections.deque[asyncio.Future[None]]] = {}
        # Callers that gave their last place back, by when (oldest first).
        self._seen: collections.OrderedDict[Hashable | None, float] = collections.OrderedDict()
        self._recheck: asyncio.TimerHandle | None = None

    def key(self, caller: Hashable | None) -> Hashable | None:
        """The key ``caller`` is counted under (everyone's is None when not fair)."""
        return caller if self.fair else None

    def held(self, caller: Hashable | None) -> int:
        """Places ``caller`` holds."""
        return self._held.get(self.key(caller), 0)

    def waiting(self, caller: Hashable | None) -> int:
        """Requests of ``caller`` waiting for a place."""
        return self._waiting.get(self.key(caller), 0)

    @property
    def queued(self) -> int:
        """Requests of every caller waiting for a place."""
        return self._queued

    def active(self, caller: Hashable | None) -> int:
        """Callers active now, ``caller`` counted in (it is about to ask)."""
        if not self.fair:
            return 1
        self._prune()
        # A caller is in _busy (holding or waiting) or in _seen, never both.
        count = len(self._busy) + len(self._seen)
        if caller not in self._busy and caller not in self._seen:
            count += 1
        return count

    @property
    def callers(self) -> int:
        """Callers holding or waiting for a place, or lingering after one.
        Changes nothing: safe to read from another thread (``--health-port``)."""
        now = time.monotonic()
        lingering = sum(1 for since in list(self._seen.values()) if now - since < self.linger)
        return len(self._busy) + lingering

    def _prune(self) -> None:
        """Forget the callers whose linger ran out."""
        now = time.monotonic()
        while self._seen:
            first, since = next(iter(self._seen.items()))
            if now - since < self.linger:
                break
            del self._seen[first]

    def share(self, caller: Hashable | None) -> int:
        """Places ``caller`` may hold now: all when alone, else its fair part."""
        if not self.fair:
            return self.size
        return max(1, self.size // self.active(caller))

    def fits(self, caller: Hashable | None, count: int = 1) -> bool:
        """Whether ``count`` more places are free and within ``caller``'s share."""
        if self.used + count > self.size:
            return False
        return self.held(caller) + count <= self.share(self.key(caller))

    def try_take(self, caller: Hashable | None, count: int = 1) -> bool:
        """Take ``count`` places if they fit and none of ``caller``'s own
        requests waits before it; False (nothing taken) otherwise."""
        key = self.key(caller)
        if self._waiting.get(key, 0) or not self.fits(key, count):
            return False
        self._take(key, count)
        return True

    def _take(self, key: Hashable | None, count: int) -> None:
        self.used += count
        self._held[key] = self._held.get(key, 0) + count
        self._busy[key] = self._busy.get(key, 0) + count
        self._seen.pop(key, None)

    def _release(self, key: Hashable | None, table: dict[Hashable | None, int], count: int) -> None:
        """Take ``count`` off ``key`` in ``table`` and in the busy count; a
        caller left with nothing starts to linger."""
        left = table.get(key, 0) - count
        if left > 0:
            table[key] = left
        else:
            table.pop(key, None)
        busy = self._busy.get(key, 0) - count
        if busy > 0:
            self._busy[key] = busy
        else:
            self._busy.pop(key, None)
            self._mark_idle(key)

    def join(self, caller: Hashable | None) -> asyncio.Future[None]:
        """A turn in ``caller``'s queue: the future is resolved once it was
        handed a place (which the caller then holds). Give it to
        :meth:`abandon` if it stops waiting."""
        key = self.key(caller)
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queues.setdefault(key, collections.deque()).append(turn)
        self._waiting[key] = self._waiting.get(key, 0) + 1
        self._busy[key] = self._busy.get(key, 0) + 1
        self._seen.pop(key, None)
        self._queued += 1
        self._schedule_recheck()
        return turn

    def abandon(self, caller: Hashable | None, turn: asyncio.Future[None]) -> None:
        """``turn``'s request stops waiting (cancelled, or its wait ran out): a
        place handed to it meanwhile is given back."""
        key = self.key(caller)
        if turn.done() and not turn.cancelled():
            self.give(key)
            return
        turn.cancel()
        self._queued -= 1
        if self._waiting.get(key, 0) <= 1:
            self._queues.pop(key, None)  # only abandoned turns are left in it
        self._release(key, self._waiting, 1)

    def give(self, caller: Hashable | None, count: int = 1) -> None:
        """Give back ``count`` places of ``caller`` and hand free places on."""
        key = self.key(caller)
        self.used -= count
        self._release(key, self._held, count)
        self.hand_over()

    def _mark_idle(self, key: Hashable | None) -> None:
        self._seen[key] = time.monotonic()
        self._seen.move_to_end(key)
        self._schedule_recheck()

    def _schedule_recheck(self) -> None:
        """Once the oldest lingering caller stops counting, the others' shares
        grow: a caller waiting only for its share may then be handed a place."""
        if self._recheck is not None or not self._queues or not self._seen or self.linger <= 0:
            return
        since = next(iter(self._seen.values()))
        delay = max(0.0, since + self.linger - time.monotonic()) + 0.01
        self._recheck = asyncio.get_running_loop().call_later(delay, self._rechecked)

    def _rechecked(self) -> None:
        self._recheck = None
        self._prune()
        self.hand_over()
        self._schedule_recheck()

    def hand_over(self) -> None:
        """Hand free places to waiting callers, round-robin, each within its share."""
        progress = True
        while progress and self.used < self.size and self._queues:
            progress = False
            for key in list(self._queues):
                queue = self._queues[key]
                while queue and queue[0].done():
                    queue.popleft()  # abandoned: its count was taken back then
                if not queue:
                    del self._queues[key]
                    continue
                if not self.fits(key):
                    continue
                turn = queue.popleft()
                self._queued -= 1
                self._take(key, 1)  # before the wait is taken off: never idle between
                self._release(key, self._waiting, 1)
                turn.set_result(None)
                # Round-robin: the caller just served goes to the back.
                del self._queues[key]
                if queue:
                    self._queues[key] = queue
                progress = True
                break
