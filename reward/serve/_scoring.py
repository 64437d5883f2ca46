"""Scoring one rollout on the service's event loop, bounded by its deadline and
cancelled when its client goes away.

Plain asyncio (a timeout, and the server's disconnect callback or one watcher
task), not anyio task groups: at thousands of requests per second their
per-request bookkeeping was a visible part of the server's CPU.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, MutableMapping

from verifleet.pipeline import run_bridged
from verifleet.reward import (
    Failure,
    PlainVerifyRequest,
    ResponsesVerifyRequest,
    RewardScorer,
    ScoredRollout,
)

from ._protocol import OnDisconnect

__all__ = [
    "DisconnectWatch",
    "Receive",
    "score_on_loop",
    "timed_out_message",
    "until_disconnected",
]

Receive = Callable[[], Awaitable[MutableMapping[str, object]]]


def timed_out_message(limit: float) -> str:
    """What a request cut by the deadline is told."""
    return (
        f"verification took longer than the server's time limit of {limit:g}s "
        "(--request-timeout); it was cancelled, retry later or raise the limit"
    )


async def until_disconnected(receive: Receive) -> None:
    """Return when the client has gone (the request's body has been read: the
    next message is the disconnect)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


class DisconnectWatch:
    """Cancels the task that creates it once the request's client goes away.

    Told by the server's :data:`DISCONNECT_EXTENSION` (``on_disconnect``) when
    given; else by a task reading ``receive`` until ``http.disconnect``, which
    any ASGI server supports but costs a task per request; with neither, it
    watches nothing. Create it in the task to cancel, after the request's body
    has been read, and :meth:`stop` it when that task's work ends.

    Args:
        receive: The request's ASGI ``receive``.
        on_disconnect: The server's :data:`DISCONNECT_EXTENSION`, if it offers one.

    Attributes:
        gone: Whether the client went away (then the task's cancellation is this
            watch's: take it back with ``uncancel()`` and answer nobody).
    """

    __slots__ = ("_stop", "_task", "_watcher", "gone")

    def __init__(self, receive: Receive | None, on_disconnect: OnDisconnect | None) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self.gone = False
        self._watcher: asyncio.Task[None] | None = None
        self._stop: Callable[[], None] | None = None
        if on_disconnect is not None:
            self._stop = on_disconnect(self._lost)
        elif receive is not None:
            self._watcher = asyncio.ensure_future(self._watch(receive))

    def _lost(self) -> None:
        self.gone = True
        self._task.cancel()

    async def _watch(self, receive: Receive) -> None:
        await until_disconnected(receive)
        self._lost()

    def stop(self) -> None:
        """Stop watching (the watcher task cancelled, the callback taken back)."""
        if self._watcher is not None:
            self._watcher.cancel()
        if self._stop is not None:
            self._stop()


async def score_on_loop(
    scorer: RewardScorer,
    body: ResponsesVerifyRequest | PlainVerifyRequest,
    *,
    timeout: float,
    receive: Receive | None = None,
    on_disconnect: OnDisconnect | None = None,
) -> ScoredRollout | Failure | None:
    """Score ``body`` on this event loop within ``timeout`` seconds.

    Args:
        scorer: The scorer.
        body: A validated verify request.
        timeout: Seconds it may take (the judge calls get the same deadline).
        receive: The request's ASGI ``receive``: when its client disconnects,
            the scoring is cancelled where it waits (no judge call starts after).
        on_disconnect: The server's :data:`DISCONNECT_EXTENSION`, told the same
            without a task reading ``receive`` (used instead when given).

    Returns:
        The scored rollout; a ``timeout`` :class:`Failure` when the deadline
        passed first; None when the client disconnected first.

    Raises:
        InvalidRequestError: unknown question, nothing to verify.
    """
    task = asyncio.current_task()
    assert task is not None
    deadline = time.monotonic() + timeout
    watch = DisconnectWatch(receive, on_disconnect)
    try:
        async with asyncio.timeout(timeout):
            return await run_bridged(scorer.score, body, deadline=deadline)
    except TimeoutError:
        return Failure(kind="timeout", reason=timed_out_message(timeout))
    except asyncio.CancelledError:
        if not watch.gone:
            raise
        task.uncancel()
        return None
    finally:
        watch.stop()
