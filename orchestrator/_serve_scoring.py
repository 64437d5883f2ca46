"""Scoring one rollout on the service's event loop, bounded by its deadline and
cancelled when its client goes away."""

from __future__ import annotations

import time
from typing import Any

import anyio
from fastapi import Request

from verifleet.pipeline import run_bridged
from verifleet.reward import Failure, InvalidRequestError, RewardScorer, ScoredRollout

__all__ = ["cancel_on_disconnect", "score_on_loop", "timed_out_message"]


def timed_out_message(limit: float) -> str:
    """What a request cut by the deadline is told."""
    return (
        f"verification took longer than the server's time limit of {limit:g}s "
        "(--request-timeout); it was cancelled, retry later or raise the limit"
    )


async def score_on_loop(
    scorer: RewardScorer, body: Any, *, timeout: float, request: Request | None = None
) -> ScoredRollout | Failure | None:
    """Score ``body`` on this event loop within ``timeout`` seconds.

    Returns:
        The scored rollout; a ``timeout`` :class:`Failure` when the deadline
        passed first; None when ``request``'s client disconnected first (the
        scoring was cancelled: no judge call starts after that).

    Raises:
        InvalidRequestError: unknown question, nothing to verify.
    """
    deadline = time.monotonic() + timeout
    outcome: ScoredRollout | Failure | None = None
    refused: InvalidRequestError | None = None
    async with anyio.create_task_group() as group:
        if request is not None:
            group.start_soon(cancel_on_disconnect, request, group.cancel_scope)
        try:
            with anyio.fail_after(timeout):
                outcome = await run_bridged(scorer.score, body, deadline=deadline)
        except TimeoutError:
            outcome = Failure(kind="timeout", reason=timed_out_message(timeout))
        except InvalidRequestError as exc:
            refused = exc  # raised below, not wrapped in the task group's exception group
        finally:
            group.cancel_scope.cancel()
    if refused is not None:
        raise refused
    return outcome


async def cancel_on_disconnect(request: Request, scope: anyio.CancelScope) -> None:
    # The body has been read: the next message is the client going away.
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return
