"""Admission control of the reward service: at most ``max_inflight`` rollouts are
scored at once; beyond that a request is answered 503 with ``Retry-After`` at once,
before its body is read, instead of queueing without bound.

A trainer that sends 16,000 rollouts at once then gets the ones the server can
take scored promptly and a clear "come back in N seconds" for the rest, rather
than connections that hang for minutes while memory grows. ``Retry-After`` is the
time the current backlog takes to drain at the recent completion rate.

Clients that never retry a 503 (NeMo Gym's agents) lose every refused rollout:
for them ``max_queued`` (``--max-queued``) lets that many requests beyond the
limit wait, first come first served, for a place to free up, each at most
``queue_timeout`` seconds; only a request that finds the queue full, or whose
wait runs out, is answered 503.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Collection, Hashable

from verifleet.pipeline import CALLER, FairShare
from verifleet.web import ASGIApp, Receive, Scope, Send, send_json_error

__all__ = ["Admission", "AdmissionGate"]


class Admission:
    """Counts the rollouts being scored against a limit, per caller (one event
    loop: no lock).

    With ``fair`` (the default) the places are shared between callers
    (:class:`~verifleet.pipeline.FairShare`): an active caller holds at most
    ``max(1, max_inflight // active callers)``, a caller alone all of them; a
    caller under its share whom a full server keeps out waits for the next
    place to free up (which is handed to it before any of a caller over its
    share), up to ``queue_timeout``, whatever ``max_queued`` says; a caller
    over its share is refused, or waits in the queue when it has room.

    Args:
        max_inflight: Rollouts scored at once at most.
        max_queued: Requests that may wait for a place beyond that (0: none;
            a request that does not fit is refused at once).
        queue_timeout: Seconds a queued request waits at most.
        fair: False: one queue for everyone, first come first served, any
            caller may take every place (the behaviour before per-caller shares).
    """

    #: Seconds over which the completion rate is averaged.
    RATE_WINDOW = 10.0

    def __init__(
        self,
        max_inflight: int,
        *,
        max_queued: int = 0,
        queue_timeout: float = 300.0,
        fair: bool = True,
    ) -> None:
        if max_inflight <= 0:
            raise ValueError("max_inflight must be positive")
        if max_queued < 0 or queue_timeout <= 0:
            raise ValueError("max_queued must be >= 0 and queue_timeout positive")
        self.max_inflight = max_inflight
        self.max_queued = max_queued
        self.queue_timeout = queue_timeout
        self.rejected = 0
        self.places = FairShare(max_inflight, fair=fair)
        self._rate = 0.0
        self._rate_at = time.monotonic()

    @property
    def inflight(self) -> int:
        """Rollouts being scored."""
        return self.places.used

    @property
    def saturated(self) -> bool:
        """Whether a new rollout would be refused now."""
        return self.inflight >= self.max_inflight

    def try_enter(self, count: int = 1, caller: Hashable | None = None) -> bool:
        """Take ``count`` places for ``caller`` (the request's :data:`CALLER`
        when None); False (and nothing taken) when they do not fit under the
        limit or within the caller's share."""
        caller = CALLER.get() if caller is None else caller
        if self.places.try_take(caller, count):
            return True
        self.rejected += 1
        return False

    @property
    def queued(self) -> int:
        """Requests waiting for a place."""
        return self.places.queued

    def _may_wait(self, caller: Hashable | None) -> bool:
        places = self.places
        if places.fair and places.held(caller) + places.waiting(caller) < places.share(caller):
            return True  # under its share: the next free place is its
        return places.queued < self.max_queued

    async def enter(self, caller: Hashable | None = None) -> bool:
        """Take one place for ``caller`` (the request's :data:`CALLER` when
        None), waiting (see the class) up to ``queue_timeout`` seconds for one
        to free up; False (nothing taken) when it may not wait or the wait ran
        out."""
        caller = CALLER.get() if caller is None else caller
        places = self.places
        if places.try_take(caller):
            return True
        if not self._may_wait(caller):
            self.rejected += 1
            return False
        turn = places.join(caller)
        try:
            async with asyncio.timeout(self.queue_timeout):
                await turn
            return True
        except TimeoutError:
            if turn.done() and not turn.cancelled():
                return True  # handed a place as the wait ran out
            places.abandon(caller, turn)
            self.rejected += 1
            return False
        except asyncio.CancelledError:
            places.abandon(caller, turn)  # gives back a place handed meanwhile
            raise

    def leave(self, count: int = 1, caller: Hashable | None = None) -> None:
        """Give back ``count`` places of ``caller``'s (the request's
        :data:`CALLER` when None) finished or abandoned rollouts."""
        caller = CALLER.get() if caller is None else caller
        self.places.give(caller, count)
        now = time.monotonic()
        # An exponentially decaying count of completions: completions per second.
        decay = math.exp(-(now - self._rate_at) / self.RATE_WINDOW)
        self._rate = self._rate * decay + count / self.RATE_WINDOW
        self._rate_at = now

    def completion_rate(self) -> float:
        """Rollouts finished per second, recently."""
        decay = math.exp(-(time.monotonic() - self._rate_at) / self.RATE_WINDOW)
        return self._rate * decay

    def readiness(self) -> tuple[int, dict[str, object], dict[str, str]]:
        """What ``GET /ready`` answers: 200 while a rollout would be admitted,
        else 503 with ``Retry-After``; the payload counts the rollouts in flight
        and refused (the service's port and ``--health-port`` answer the same)."""
        ready = not self.saturated
        payload: dict[str, object] = {
            "ready": ready,
            "inflight": self.inflight,
            "max_inflight": self.max_inflight,
            "queued": self.queued,
            "rejected": self.rejected,
            "callers": self.places.callers,
        }
        if ready:
            return 200, payload, {}
        return 503, payload, {"retry-after": str(self.retry_after())}

    def retry_after(self) -> int:
        """Whole seconds after which the current backlog should have drained
        (1 to 60)."""
        rate = self.completion_rate()
        if rate <= 0:
            return 1
        return max(1, min(60, math.ceil(self.inflight / rate)))


class AdmissionGate:
    """ASGI middleware: a POST to one of ``paths`` takes one place of ``admission``
    for as long as the app handles it (after a wait in its queue, when it has
    one), or is answered 503 with ``Retry-After`` before a byte of its body is
    read. Batches take their places in the app, once their size is known.

    Every request's caller (``identify``) is set as :data:`CALLER` for the
    request's task: its places, here and in the batch routes, and the sandbox
    executors its scoring asks for are counted against that caller.

    Args:
        app: The wrapped app.
        admission: The shared counter.
        paths: Paths whose POSTs are admitted one place each.
        identify: Who sent a request (None: nobody in particular, every
            request the same caller).
    """

    def __init__(
        self,
        app: ASGIApp,
        admission: Admission,
        paths: Collection[str],
        identify: Callable[[Scope], Hashable | None] | None = None,
    ) -> None:
        self.app = app
        self.admission = admission
        self.paths = frozenset(paths)
        self.identify = identify

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        caller = self.identify(scope) if self.identify is not None else None
        # The request's own task (a task per request): the value goes nowhere else.
        CALLER.set(caller)
        if scope.get("method") != "POST" or scope.get("path") not in self.paths:
            await self.app(scope, receive, send)
            return
        admission = self.admission
        if not await admission.enter(caller):
            await refuse(send, admission, caller=caller)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            admission.leave(1, caller)


async def refuse(
    send: Send, admission: Admission, count: int = 1, caller: Hashable | None = None
) -> None:
    """Answer 503 with ``Retry-After`` for ``count`` rollouts that do not fit."""
    await send_json_error(send, 503, *refusal(admission, count, caller))


def refusal(
    admission: Admission, count: int = 1, caller: Hashable | None = None
) -> tuple[str, list[tuple[bytes, bytes]]]:
    """The message and headers (``Retry-After``) of a 503 for ``count``
    rollouts of ``caller`` that do not fit: under the server's limit, or
    within the caller's share of it."""
    wait = admission.retry_after()
    what = "a rollout" if count == 1 else f"{count} rollouts"
    places = admission.places
    if admission.inflight + count <= admission.max_inflight:
        message = (
            f"this client holds {places.held(caller)} of the server's "
            f"{admission.max_inflight} places (--max-inflight), its fair share while "
            f"{places.active(caller)} clients are active; {what} more would pass it: "
            f"retry in {wait}s"
        )
    else:
        message = (
            f"the server is scoring {admission.inflight} rollouts, its limit "
            f"(--max-inflight {admission.max_inflight}); {what} more would not fit: "
            f"retry in {wait}s"
        )
    return message, [(b"retry-after", str(wait).encode())]
