"""The reward service: ``POST /verify``, ``POST /verify/batch``, ``GET /health``,
``GET /ready`` and the OpenAPI document.

Status codes: 200 with the reward; 400 for a body that is not JSON; 401 without
the bearer token (when the service has one; ``/health`` and ``/ready`` never need
it); 403 for a ``Host`` the server does not answer to (DNS rebinding); 404 for an
unknown question id; 413 for a body over the size limit; 422 for a body of the
wrong shape or a response with nothing to verify; 503 with ``Retry-After`` when
``max_inflight`` rollouts are being scored already; 500 only for faults of the
server itself. A request that could not be verified for an infrastructure reason
(judge unreachable or refusing, a sandbox executor failure, the deadline) is never
answered as a score: 502/503/504 with ``reward: null`` and the failure, or (with
``infra_errors="null"``) 200 with ``reward: null`` and the failure.

Every request is scored on the event loop (:func:`~verifleet.pipeline.run_bridged`):
judge calls are asynchronous HTTP, sandbox calls run in worker threads, so neither
the number of threads nor a slow judge caps how many requests are in flight, and
``/health`` answers at once whatever the backlog. A request whose client went
away, or whose deadline passed, is cancelled where it waits: it makes no further
judge call.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from verifleet import __version__
from verifleet.pipeline import PipelineResources, close_async_senders
from verifleet.reward import (
    EquivalenceVerdict,
    Failure,
    InvalidRequestError,
    RewardBreakdown,
    RewardConfig,
    RewardMode,
    RewardScorer,
    ScoredRollout,
    UnknownQuestionError,
    VerifyRequest,
)
from verifleet.schemas import Benchmark, ConfigError, ModelConfig, VerificationResult

from ._serve_admission import Admission, AdmissionGate
from ._serve_batch import add_batch_route
from ._serve_defaults import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_INFLIGHT,
    DEFAULT_REQUEST_TIMEOUT,
)
from ._serve_guards import BearerAuth, BodyLimit, HostCheck, bearer_token_ok
from ._serve_scoring import score_on_loop

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_INFLIGHT",
    "DEFAULT_REQUEST_TIMEOUT",
    "HEALTH_PATH",
    "READY_PATH",
    "HealthResponse",
    "InfraErrors",
    "VerifyResponse",
    "create_app",
]

_log = logging.getLogger(__name__)


#: Served without the bearer token, so load balancers can probe the service.
HEALTH_PATH = "/health"
READY_PATH = "/ready"
VERIFY_PATH = "/verify"

InfraErrors = Literal["status", "null"]

#: The status of an infrastructure failure when ``infra_errors="status"``.
FAILURE_STATUS = {"judge_unreachable": 502, "judge_refused": 502, "executor": 503, "timeout": 504}


class VerifyResponse(BaseModel):
    """The request's own fields, plus the reward and the verification record.
    ``reward`` is null (and ``failure`` says why) when the response could not be
    verified for an infrastructure reason."""

    model_config = ConfigDict(extra="allow")

    reward: float | None
    question_id: str
    reward_breakdown: list[RewardBreakdown]
    equivalence: EquivalenceVerdict | None = None
    failure: Failure | None = None
    verification_result: VerificationResult


class HealthResponse(BaseModel):
    """``GET /health``. Without the bearer token (when the service has one) only
    ``status`` and ``version`` are filled: what the service verifies is not public."""

    status: str
    version: str
    benchmark: str | None = None
    questions: int | None = None
    reward_mode: RewardMode | None = None
    parsing_models: list[str] | None = None


class ReadyResponse(BaseModel):
    """``GET /ready``: 200 while a rollout would be admitted, 503 when saturated."""

    ready: bool
    inflight: int
    max_inflight: int
    rejected: int


def _error(
    status: int, message: str, detail: Any = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    payload: dict[str, Any] = {"message": message}
    if detail is not None:
        payload["detail"] = detail
    return JSONResponse(payload, status_code=status, headers=headers)


def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return _error(400, "the request body is not valid JSON")
    lines = []
    for err in errors:
        where = ".".join(
            str(p) for p in err.get("loc", ()) if p not in ("body", "responses", "plain")
        )
        lines.append(f"{where or 'body'}: {err.get('msg', 'invalid')}")
    detail = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in errors]
    return _error(422, "malformed request: " + "; ".join(lines[:10]), detail)


def _invalid_request(_request: Request, exc: Exception) -> JSONResponse:
    return _error(404 if isinstance(exc, UnknownQuestionError) else 422, str(exc))


def _server_fault(_request: Request, exc: Exception) -> JSONResponse:
    _log.exception("verify failed", exc_info=exc)
    return _error(500, f"internal error: {type(exc).__name__}")


def reply_fields(scored: ScoredRollout) -> dict[str, Any]:
    """What a scored request's reply adds to the request's own fields."""
    fields: dict[str, Any] = {
        "reward": scored.reward,
        "question_id": scored.question_id,
        "reward_breakdown": [b.model_dump(mode="json") for b in scored.breakdowns],
        "equivalence": scored.equivalence.model_dump() if scored.equivalence else None,
    }
    if scored.failure is not None:
        fields["failure"] = scored.failure.model_dump()
    fields["verification_result"] = scored.results[0].model_dump(mode="json")
    if len(scored.results) > 1:
        fields["verification_results"] = [r.model_dump(mode="json") for r in scored.results]
    return fields


def create_app(
    benchmark: Benchmark,
    parsing_models: Sequence[ModelConfig],
    reward_config: RewardConfig,
    *,
    resources: PipelineResources | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    token: str | None = None,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    max_inflight: int = DEFAULT_MAX_INFLIGHT,
    max_batch: int = DEFAULT_MAX_BATCH,
    infra_errors: InfraErrors = "status",
    allowed_hosts: Sequence[str] = (),
) -> FastAPI:
    """The reward service for ``benchmark``.

    Args:
        benchmark: Questions the responses answer.
        parsing_models: The judges (the reward is their mean when several).
        reward_config: How results become rewards.
        resources: Pipeline caches (use ``reward_resources(RedisJudgeCache(...))``
            to share the judge-call cache through Redis).
        max_body_bytes: Larger request bodies get 413.
        token: When set, every route but ``/health`` and ``/ready`` needs
            ``Authorization: Bearer <token>`` (else 401).
        request_timeout: Seconds one rollout may take; a longer ``/verify`` gets
            504 (or its batch entry a ``timeout`` failure), its scoring cancelled.
        max_inflight: Rollouts scored at once; more get 503 with ``Retry-After``.
        max_batch: Rollouts one ``/verify/batch`` may carry.
        infra_errors: How ``/verify`` answers a request that could not be
            verified for an infrastructure reason: ``status`` (502 judge, 503
            executor, 504 deadline) or ``null`` (200); both with ``reward: null``
            and the ``failure``.
        allowed_hosts: Host names accepted besides localhost and IP addresses
            (``*``: any).

    Raises:
        ConfigError: the reward config does not fit the benchmark, an empty
            token, or a limit that is not positive.
    """
    if token is not None and not token.strip():
        raise ConfigError("the bearer token is empty")
    if min(max_body_bytes, request_timeout, max_inflight, max_batch) <= 0:
        raise ConfigError(
            "max_body_bytes, request_timeout, max_inflight and max_batch must be positive"
        )
    if infra_errors not in ("status", "null"):
        raise ConfigError(f"infra_errors must be 'status' or 'null', not {infra_errors!r}")
    scorer = RewardScorer(benchmark, parsing_models, reward_config, resources=resources)
    admission = Admission(max_inflight)
    app = FastAPI(
        title="verifleet reward service",
        version=__version__,
        description="Verifies agent responses against a benchmark and returns a reward in [0, 1].",
    )
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(InvalidRequestError, _invalid_request)
    app.add_exception_handler(Exception, _server_fault)
    # The last middleware added runs first: the Host check, then auth (401 before
    # any body is read), then admission (503 before any body is read).
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    app.add_middleware(AdmissionGate, admission=admission, paths=[VERIFY_PATH])
    if token is not None:
        app.add_middleware(BearerAuth, token=token, open_paths=[HEALTH_PATH, READY_PATH])
    app.add_middleware(HostCheck, allowed_hosts=allowed_hosts)
    app.state.scorer = scorer
    app.state.admission = admission
    app.router.add_event_handler("shutdown", close_async_senders)
    secret = token.encode() if token is not None else None

    @app.get(HEALTH_PATH, response_model=HealthResponse, response_model_exclude_none=True)
    async def health(request: Request) -> HealthResponse:
        """Liveness, and (with the token, if the service has one) what the service
        verifies against. Answered on the event loop at once, whatever the backlog."""
        if secret is not None and not bearer_token_ok(request.headers.raw, secret):
            return HealthResponse(status="ok", version=__version__)
        return HealthResponse(
            status="ok",
            version=__version__,
            benchmark=benchmark.name,
            questions=len(benchmark.questions),
            reward_mode=reward_config.mode,
            parsing_models=[m.model_name for m in scorer.parsing_models],
        )

    @app.get(READY_PATH, response_model=ReadyResponse, responses={503: {"model": ReadyResponse}})
    async def ready() -> JSONResponse:
        """Whether a rollout would be admitted now: 200, or 503 with ``Retry-After``
        while ``max_inflight`` rollouts are being scored."""
        state = ReadyResponse(
            ready=not admission.saturated,
            inflight=admission.inflight,
            max_inflight=admission.max_inflight,
            rejected=admission.rejected,
        )
        if state.ready:
            return JSONResponse(state.model_dump())
        return JSONResponse(
            state.model_dump(),
            status_code=503,
            headers={"retry-after": str(admission.retry_after())},
        )

    @app.post(
        VERIFY_PATH,
        response_model=VerifyResponse,
        responses={
            400: {"description": "body is not JSON"},
            401: {"description": "missing or wrong bearer token"},
            403: {"description": "a Host this server does not answer to"},
            404: {"description": "unknown question id"},
            413: {"description": "body too large"},
            422: {"description": "malformed request or nothing to verify"},
            502: {"description": "the judge was unreachable or refused (reward null)"},
            503: {"description": "over --max-inflight (Retry-After), or an executor failed"},
            504: {"description": "scoring took longer than the time limit (reward null)"},
        },
    )
    async def verify(body: VerifyRequest, request: Request) -> JSONResponse:
        """Verify the response of ``body`` and return the request with its reward.

        Scoring runs on the event loop, bounded by the time limit (the judge
        calls get the same deadline) and cancelled if the client goes away.
        """
        outcome = await score_on_loop(scorer, body, timeout=request_timeout, request=request)
        if outcome is None:  # the client is gone: nobody reads this
            return _error(499, "client closed the request")
        payload = body.model_dump(mode="json", exclude_unset=True)
        if isinstance(outcome, Failure):
            payload.update(reward=None, failure=outcome.model_dump())
            if infra_errors == "null":
                return JSONResponse(payload)
            payload["message"] = outcome.reason
            return JSONResponse(payload, status_code=504)
        payload.update(reply_fields(outcome))
        if outcome.failure is not None and infra_errors == "status":
            payload["message"] = (
                f"not verified ({outcome.failure.kind}): {outcome.failure.reason}; "
                "no reward was given"
            )
            status = FAILURE_STATUS[outcome.failure.kind]
            headers = {"retry-after": "1"} if status == 503 else None
            return JSONResponse(payload, status_code=status, headers=headers)
        return JSONResponse(payload)

    add_batch_route(app, scorer, admission, timeout=request_timeout, max_batch=max_batch)
    return app
