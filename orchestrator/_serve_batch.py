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

import json
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import TypeAdapter, ValidationError

from verifleet.reward import (
    Failure,
    InvalidRequestError,
    RewardScorer,
    ScoredRollout,
    UnknownQuestionError,
    VerifyRequest,
)

from ._serve_admission import Admission
from ._serve_defaults import DEFAULT_MAX_BATCH
from ._serve_scoring import cancel_on_disconnect, score_on_loop

__all__ = ["BATCH_PATH", "DEFAULT_MAX_BATCH", "add_batch_route"]

BATCH_PATH = "/verify/batch"


_REQUEST: TypeAdapter[Any] = TypeAdapter(VerifyRequest)


def _entry_error(status: int, message: str) -> dict[str, Any]:
    return {"reward": None, "error": {"status": status, "message": message}}


def _rollouts(data: Any) -> list[Any] | str:
    """The rollouts of a batch body (a list, or ``{"rollouts": [...]}``), or what is wrong."""
    if isinstance(data, dict):
        data = data.get("rollouts")
        if data is None:
            return 'a batch is a JSON list of verify requests, or {"rollouts": [...]}'
    if not isinstance(data, list):
        return f"'rollouts' must be a list of verify requests, not {type(data).__name__}"
    return data


async def _score_entry(
    scorer: RewardScorer, item: Any, index: int, results: list[Any], timeout: float
) -> None:
    try:
        body = _REQUEST.validate_python(item)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in e['loc'][1:]) or 'rollout'}: {e['msg']}"
            for e in exc.errors()
        ]
        results[index] = _entry_error(422, "malformed request: " + "; ".join(problems[:5]))
        return
    try:
        outcome = await score_on_loop(scorer, body, timeout=timeout)
    except InvalidRequestError as exc:
        status = 404 if isinstance(exc, UnknownQuestionError) else 422
        results[index] = _entry_error(status, str(exc))
        return
    if isinstance(outcome, Failure):
        results[index] = {"reward": None, "failure": outcome.model_dump()}
    elif isinstance(outcome, ScoredRollout):
        results[index] = outcome.verdict_fields()


def add_batch_route(
    app: FastAPI, scorer: RewardScorer, admission: Admission, *, timeout: float, max_batch: int
) -> None:
    """Add ``POST /verify/batch`` to ``app``.

    A batch takes one admission place per rollout, all or none: one that does
    not fit now gets 503 with ``Retry-After``; one larger than ``max_batch`` or
    than the admission limit itself gets 413.
    """

    @app.post(
        BATCH_PATH,
        responses={
            400: {"description": "body is not JSON"},
            413: {"description": "more rollouts than --max-batch or --max-inflight"},
            422: {"description": "not a list of rollouts"},
            503: {"description": "the batch does not fit under --max-inflight now"},
        },
    )
    async def verify_batch(request: Request) -> JSONResponse:
        """Verify a list of rollouts; one entry per rollout, in order."""
        try:
            data = json.loads(await request.body())
        except ValueError:
            return JSONResponse({"message": "the request body is not valid JSON"}, 400)
        rollouts = _rollouts(data)
        if isinstance(rollouts, str):
            return JSONResponse({"message": rollouts}, 422)
        count = len(rollouts)
        limit = min(max_batch, admission.max_inflight)
        if count > limit:
            return JSONResponse(
                {
                    "message": f"a batch of {count} rollouts is larger than the server takes "
                    f"at once ({limit}: --max-batch {max_batch}, --max-inflight "
                    f"{admission.max_inflight}); split it"
                },
                413,
            )
        if not admission.try_enter(count):
            wait = admission.retry_after()
            return JSONResponse(
                {
                    "message": f"the server is scoring {admission.inflight} rollouts; "
                    f"{count} more would pass its limit (--max-inflight "
                    f"{admission.max_inflight}): retry in {wait}s"
                },
                503,
                headers={"retry-after": str(wait)},
            )
        results: list[Any] = [None] * count
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(cancel_on_disconnect, request, group.cancel_scope)
                async with anyio.create_task_group() as scoring:
                    for index, item in enumerate(rollouts):
                        scoring.start_soon(_score_entry, scorer, item, index, results, timeout)
                group.cancel_scope.cancel()
        finally:
            admission.leave(count)
        return JSONResponse({"results": results})
