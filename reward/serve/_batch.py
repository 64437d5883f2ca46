"""``POST /verify/batch``: many rollouts in one request, one reward each, in order.

A trainer that collects a whole batch of rollouts sends them in one request
instead of thousands of connections. The rollouts are scored concurrently, each
exactly as ``/verify`` scores it; the reply lists, in request order, the verdict
fields ``verifleet reward`` writes per line (``reward``, ``question_id``,
``verify_result``, ``verify_granular_result``, ``reward_components``,
``verification_error``, and ``equivalence`` when asked). An entry that could not
be scored says so in its own place: ``reward: null`` with ``failure`` (the judge
unreachable, an executor failure, the deadline) or with ``error`` (``status`` and
``message``, as ``/verify`` would have answered: 404 unknown question, 422
malformed). The batch itself is 200 unless the whole body is unusable.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from verifleet.pipeline import CALLER
from verifleet.reward import (
    Failure,
    InvalidRequestError,
    PlainVerifyRequest,
    ResponsesVerifyRequest,
    RewardScorer,
    ScoredRollout,
    UnknownQuestionError,
    VerifyRequest,
)

from ._admission import Admission, refusal
from ._protocol import OnDisconnect
from ._scoring import DisconnectWatch, Receive, score_on_loop

__all__ = [
    "BATCH_PATH",
    "REQUEST",
    "BatchReply",
    "score_batch",
    "score_rollouts",
    "validation_problems",
]

BATCH_PATH = "/verify/batch"

#: Validates one verify request body (either shape).
REQUEST: TypeAdapter[ResponsesVerifyRequest | PlainVerifyRequest] = TypeAdapter(VerifyRequest)

#: (status, payload, extra headers) of a batch reply; None when the client left.
BatchReply = tuple[int, dict[str, Any], dict[str, str]] | None


def validation_problems(exc: ValidationError, limit: int = 10) -> list[str]:
    """``where: what`` of each problem (the shape tag left out of the path)."""
    lines = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p not in ("responses", "plain"))
        lines.append(f"{where or 'body'}: {err.get('msg', 'invalid')}")
    return lines


def _entry_error(status: int, message: str) -> dict[str, object]:
    return {"reward": None, "error": {"status": status, "message": message}}


def _rollouts(data: object) -> list[object] | str:
    """The rollouts of a batch body (a list, or ``{"rollouts": [...]}``), or what is wrong."""
    if isinstance(data, dict):
        data = data.get("rollouts")
        if data is None:
            return 'a batch is a JSON list of verify requests, or {"rollouts": [...]}'
    if not isinstance(data, list):
        return f"'rollouts' must be a list of verify requests, not {type(data).__name__}"
    return data


async def _score_entry(scorer: RewardScorer, item: object, timeout: float) -> dict[str, object]:
    try:
        body = REQUEST.validate_python(item)
    except ValidationError as exc:
        return _entry_error(422, "malformed request: " + "; ".join(validation_problems(exc, 5)))
    try:
        outcome = await score_on_loop(scorer, body, timeout=timeout)
    except InvalidRequestError as exc:
        return _entry_error(404 if isinstance(exc, UnknownQuestionError) else 422, str(exc))
    if isinstance(outcome, Failure):
        return {"reward": None, "failure": outcome.model_dump()}
    assert isinstance(outcome, ScoredRollout)
    return outcome.verdict_fields()


async def score_batch(
    raw: bytes,
    scorer: RewardScorer,
    admission: Admission,
    *,
    timeout: float,
    max_batch: int,
    receive: Receive,
    on_disconnect: OnDisconnect | None = None,
) -> BatchReply:
    """Score a batch body.

    A batch takes one admission place per rollout, all or none: one that does
    not fit now gets 503 with ``Retry-After``; one larger than ``max_batch`` or
    than the admission limit itself gets 413. A client that disconnects cancels
    the whole batch (None is returned).

    Args:
        raw: The request's body.
        scorer: The service's scorer.
        admission: The service's admission counter.
        timeout: Seconds each rollout may take.
        max_batch: Rollouts one batch may carry.
        receive: The request's ASGI ``receive``, its body already read: read
            until ``http.disconnect`` to notice the client leaving when
            ``on_disconnect`` is None.
        on_disconnect: The server's :data:`DISCONNECT_EXTENSION`, when it offers
            one: it tells the batch that its client left, with no task reading
            ``receive``.

    Returns:
        (status, payload, extra headers), or None when the client disconnected.
        A body that is not JSON or not a list of rollouts is a 400 or 422 reply;
        an entry that cannot be scored says so in its own place.
    """
    try:
        data = json.loads(raw)
    except ValueError:
        return 400, {"message": "the request body is not valid JSON"}, {}
    rollouts = _rollouts(data)
    if isinstance(rollouts, str):
        return 422, {"message": rollouts}, {}
    return await score_rollouts(
        rollouts,
        scorer,
        admission,
        timeout=timeout,
        max_batch=max_batch,
        receive=receive,
        on_disconnect=on_disconnect,
    )


async def score_rollouts(
    rollouts: Sequence[object],
    scorer: RewardScorer,
    admission: Admission,
    *,
    timeout: float,
    max_batch: int,
    receive: Receive,
    on_disconnect: OnDisconnect | None = None,
) -> BatchReply:
    """Score a batch's rollouts (verify request bodies), admitted all or none;
    the arguments and the reply are :func:`score_batch`'s (other routes that
    take many rollouts in a body of their own share it)."""
    count = len(rollouts)
    limit = min(max_batch, admission.max_inflight)
    if count > limit:
        message = (
            f"a batch of {count} rollouts is larger than the server takes at once ({limit}: "
            f"--max-batch {max_batch}, --max-inflight {admission.max_inflight}); split it"
        )
        return 413, {"message": message}, {}
    if not admission.try_enter(count):
        message, headers = refusal(admission, count, CALLER.get())
        return 503, {"message": message}, {k.decode(): v.decode() for k, v in headers}
    task = asyncio.current_task()
    assert task is not None
    # One watch for the whole batch: its entries are scored in tasks of their
    # own, which the batch's cancellation reaches through ``gather``.
    watch = DisconnectWatch(receive, on_disconnect)
    try:
        results = await asyncio.gather(*(_score_entry(scorer, r, timeout) for r in rollouts))
    except asyncio.CancelledError:
        if not watch.gone:
            raise
        task.uncancel()
        return None
    finally:
        watch.stop()
        admission.leave(count)
    return 200, {"results": results}, {}
