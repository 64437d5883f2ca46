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
import collections
import math
import time
from collections.abc import Collection
from typing import Any

from verifleet.web import ASGIApp, Receive, Scope, Send, send_json_error

__all__ = ["Admission", "AdmissionGate"]


class Admission:
    """Counts the rollouts being scored against a limit (one event loop: no lock).

    Args:
        max_inflight: Rollouts scored at once at most.
        max_queued: Requests that may wait for a place beyond that (0: none;
            a request that does not fit is refused at once).
        queue_timeout: Seconds a queued request waits at most.
    """

    #: Seconds over which the completion rate is averaged.
    RATE_WINDOW = 10.0

    def __init__(
        self, max_inflight: int, *, max_queued: int = 0, queue_timeout: float = 300.0
    ) -> None:
        if max_inflight <= 0:
            raise ValueError("max_inflight must be positive")
        if max_queued < 0 or queue_timeout <= 0:
            raise ValueError("max_queued must be >= 0 and queue_timeout positive")
        self.max_inflight = max_inflight
        self.max_queued = max_queued
        self.queue_timeout = queue_timeout
        self.inflight = 0
        self.rejected = 0
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()
        self._rate = 0.0
        self._rate_at = time.monotonic()

    @property
    def saturated(self) -> bool:
        """Whether a new rollout would be refused now."""
        return self.inflight >= self.max_inflight

    def try_enter(self, count: int = 1) -> bool:
        """Take ``count`` places; False (and nothing taken) when they do not fit."""
        if self.inflight + count > self.max_inflight:
            self.rejected += 1
            return False
        self.inflight += count
        return True

    @property
    def queued(self) -> int:
        """Requests waiting for a place."""
        return sum(1 for w in self._waiting if not w.done())

    async def enter(self) -> bool:
        """Take one place, waiting in the queue (when it has room) up to
        ``queue_timeout`` seconds for one to free up; False (nothing taken)
        when the queue is full or the wait ran out."""
        if self.inflight < self.max_inflight and not self.queued:
            self.inflight += 1
            return True
        if self.queued >= self.max_queued:
            self.rejected += 1
            return False
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            async with asyncio.timeout(self.queue_timeout):
                await turn
            return True
        except TimeoutError:
            if turn.done() and not turn.cancelled():
                return True  # handed a place as the wait ran out
            self.rejected += 1
            return False
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.leave()  # handed a place as the request was cancelled
            raise
        finally:
            turn.cancel()  # no-op once handed a place; else no one hands it one

    def _hand_over(self) -> None:
        """Give free places to the requests queued first."""
        while self._waiting and self.inflight < self.max_inflight:
            turn = self._waiting.popleft()
            if not turn.done():
                self.inflight += 1
                turn.set_result(None)

    def leave(self, count: int = 1) -> None:
        """Give back ``count`` places of finished (or abandoned) rollouts."""
        self.inflight -= count
        self._hand_over()
        now = time.monotonic()
        # An exponentially decaying count of completions: completions per second.
        decay = math.exp(-(now - self._rate_at) / self.RATE_WINDOW)
        self._rate = self._rate * decay + count / self.RATE_WINDOW
        self._rate_at = now

    def completion_rate(self) -> float:
        """Rollouts finished per second, recently."""
        decay = math.exp(-(time.monotonic() - self._rate_at) / self.RATE_WINDOW)
        return self._rate * decay

    def readiness(self) -> tuple[int, dict[str, Any], dict[str, str]]:
        """What ``GET /ready`` answers: 200 while a rollout would be admitted,
        else 503 with ``Retry-After``; the payload counts the rollouts in flight
        and refused (the service's port and ``--health-port`` answer the same)."""
        ready = not self.saturated
        payload = {
            "ready": ready,
            "inflight": self.inflight,
            "max_inflight": self.max_inflight,
            "queued": self.queued,
            "rejected": self.rejected,
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
    one), or is answered 503 with ``Retry-After`` before a byte of its body is read. Batches take their places in the app,
    once their size is known.

    Args:
        app: The wrapped app.
        admission: The shared counter.
        paths: Paths whose POSTs are admitted one place each.
    """

    def __init__(self, app: ASGIApp, admission: Admission, paths: Collection[str]) -> None:
        self.app = app
        self.admission = admission
        self.paths = frozenset(paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope.get("method") != "POST"
            or scope.get("path") not in self.paths
        ):
            await self.app(scope, receive, send)
            return
        admission = self.admission
        if not await admission.enter():
            await refuse(send, admission)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            admission.leave()


async def refuse(send: Send, admission: Admission, count: int = 1) -> None:
    """Answer 503 with ``Retry-After`` for ``count`` rollouts that do not fit."""
    wait = admission.retry_after()
    what = "a rollout" if count == 1 else f"{count} rollouts"
    await send_json_error(
        send,
        503,
        f"the server is scoring {admission.inflight} rollouts, its limit "
        f"(--max-inflight {admission.max_inflight}); {what} more would not fit: "
        f"retry in {wait}s",
        [(b"retry-after", str(wait).encode())],
    )
