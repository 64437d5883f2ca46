"""Scoring one rollout on the service's event loop, bounded by its deadline and
cancelled when its client goes away.

Plain asyncio (a timeout and one watcher task), not anyio task groups: at
thousands of requests per second their per-request bookkeeping was a visible
part of the server's CPU.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from verifleet.pipeline import run_bridged
from verifleet.reward import Failure, RewardScorer, ScoredRollout

from ._serve_protocol import OnDisconnect

__all__ = ["Receive", "score_on_loop", "timed_out_message", "until_disconnected"]

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]


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


async def score_on_loop(
    scorer: RewardScorer,
    body: Any,
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
    gone = False
    watcher: asyncio.Task[None] | None = None
    stop_watching: Callable[[], None] | None = None
    if on_disconnect is not None:

        def lost() -> None:
            nonlocal gone
            gone = True
            task.cancel()

        stop_watching = on_disconnect(lost)
    elif receive is not None:

        async def watch() -> None:
            nonlocal gone
            await until_disconnected(receive)
            gone = True
            task.cancel()

        watcher = asyncio.ensure_future(watch())
    try:
        async with asyncio.timeout(timeout):
            return await run_bridged(scorer.score, body, deadline=deadline)
    except TimeoutError:
        return Failure(kind="timeout", reason=timed_out_message(timeout))
    except asyncio.CancelledError:
        if not gone:
            raise
        task.uncancel()
        return None
    finally:
        if watcher is not None:
            watcher.cancel()
        if stop_watching is not None:
            stop_watching()
