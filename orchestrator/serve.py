"""The reward service: ``POST /verify``, ``GET /health`` and the OpenAPI document.

Status codes: 200 with the reward; 400 for a body that is not JSON; 401 without
the bearer token (when the service has one; ``/health`` never needs it); 404 for
an unknown question id; 413 for a body over the size limit; 422 for a body of the
wrong shape or a response with nothing to verify; 504 when scoring takes longer
than the per-request time limit; 500 only for faults of the server itself. A judge that fails is not a server fault: the result records it
and the reward is the config's ``error_reward``.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from verifleet import __version__
from verifleet.pipeline import PipelineResources
from verifleet.reward import (
    EquivalenceVerdict,
    InvalidRequestError,
    RewardBreakdown,
    RewardConfig,
    RewardMode,
    RewardScorer,
    UnknownQuestionError,
    VerifyRequest,
)
from verifleet.schemas import Benchmark, ConfigError, ModelConfig, VerificationResult

from ._serve_guards import BearerAuth, BodyLimit, bearer_token_ok

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_REQUEST_TIMEOUT",
    "HEALTH_PATH",
    "HealthResponse",
    "VerifyResponse",
    "create_app",
]

_log = logging.getLogger(__name__)

#: A long agent trajectory is tens of kilobytes; 8 MiB leaves room without letting
#: one request hold a worker thread's memory hostage.
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024

#: Seconds one ``/verify`` may take: a few judge calls with their retries. Longer
#: requests get 504 and their scoring is abandoned (its judge calls stop at this
#: deadline), so a stuck judge cannot pile up requests.
DEFAULT_REQUEST_TIMEOUT = 300.0

#: Served without the bearer token, so load balancers can probe the service.
HEALTH_PATH = "/health"


class VerifyResponse(BaseModel):
    """The request's own fields, plus the reward and the verification record."""

    model_config = ConfigDict(extra="allow")

    reward: float
    question_id: str
    reward_breakdown: list[RewardBreakdown]
    equivalence: EquivalenceVerdict | None = None
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


def _error(status: int, message: str, detail: Any = None) -> JSONResponse:
    payload: dict[str, Any] = {"message": message}
    if detail is not None:
        payload["detail"] = detail
    return JSONResponse(payload, status_code=status)


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


def _timed_out(limit: float) -> JSONResponse:
    return _error(
        504,
        f"verification took longer than the server's time limit of {limit:g}s "
        "(--request-timeout); it was abandoned, retry later or raise the limit",
    )


def _invalid_request(_request: Request, exc: Exception) -> JSONResponse:
    return _error(404 if isinstance(exc, UnknownQuestionError) else 422, str(exc))


def _server_fault(_request: Request, exc: Exception) -> JSONResponse:
    _log.exception("verify failed", exc_info=exc)
    return _error(500, f"internal error: {type(exc).__name__}")


def create_app(
    benchmark: Benchmark,
    parsing_models: Sequence[ModelConfig],
    reward_config: RewardConfig,
    *,
    resources: PipelineResources | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    token: str | None = None,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> FastAPI:
    """The reward service for ``benchmark``.

    Args:
        benchmark: Questions the responses answer.
        parsing_models: The judges (the reward is their mean when several).
        reward_config: How results become rewards.
        resources: Pipeline caches (use ``reward_resources(RedisJudgeCache(...))``
            to share the judge-call cache through Redis).
        max_body_bytes: Larger request bodies get 413.
        token: When set, every route but ``/health`` needs
            ``Authorization: Bearer <token>`` (else 401).
        request_timeout: Seconds one ``/verify`` may take; longer ones get 504,
            their judge calls stop at that deadline and their result is discarded.

    Raises:
        ConfigError: the reward config does not fit the benchmark, an empty
            token, or a limit that is not positive.
    """
    if token is not None and not token.strip():
        raise ConfigError("the bearer token is empty")
    if max_body_bytes <= 0 or request_timeout <= 0:
        raise ConfigError("max_body_bytes and request_timeout must be positive")
    scorer = RewardScorer(benchmark, parsing_models, reward_config, resources=resources)
    app = FastAPI(
        title="verifleet reward service",
        version=__version__,
        description="Verifies agent responses against a benchmark and returns a reward in [0, 1].",
    )
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(InvalidRequestError, _invalid_request)
    app.add_exception_handler(Exception, _server_fault)
    # The last middleware added runs first: auth answers 401 before any body is read.
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    if token is not None:
        app.add_middleware(BearerAuth, token=token, open_paths=[HEALTH_PATH])
    app.state.scorer = scorer
    secret = token.encode() if token is not None else None

    @app.get(HEALTH_PATH, response_model=HealthResponse, response_model_exclude_none=True)
    def health(request: Request) -> HealthResponse:
        """Liveness, and (with the token, if the service has one) what the service
        verifies against."""
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

    @app.post(
        "/verify",
        response_model=VerifyResponse,
        responses={
            400: {"description": "body is not JSON"},
            401: {"description": "missing or wrong bearer token"},
            404: {"description": "unknown question id"},
            413: {"description": "body too large"},
            422: {"description": "malformed request or nothing to verify"},
            504: {"description": "scoring took longer than the time limit"},
        },
    )
    async def verify(body: VerifyRequest) -> JSONResponse:
        """Verify the response of ``body`` and return the request with its reward.

        Scoring blocks on judge calls, so it runs in a worker thread, bounded by
        the time limit: the judge calls get the same deadline (no new call or
        retry starts after it), and a request still running at the deadline is
        answered 504 at once while its thread winds down and its result is dropped.
        """
        started = time.monotonic()
        deadline = started + request_timeout
        try:
            with anyio.fail_after(request_timeout):
                scored = await anyio.to_thread.run_sync(
                    functools.partial(scorer.score, body, deadline=deadline),
                    abandon_on_cancel=True,
                )
        except TimeoutError:
            return _timed_out(request_timeout)
        if time.monotonic() >= deadline:
            # Judge calls cut by the deadline: not a verdict on the response.
            return _timed_out(request_timeout)
        payload = body.model_dump(mode="json", exclude_unset=True)
        payload.update(
            reward=scored.reward,
            question_id=scored.question_id,
            reward_breakdown=[b.model_dump(mode="json") for b in scored.breakdowns],
            equivalence=scored.equivalence.model_dump() if scored.equivalence else None,
            verification_result=scored.results[0].model_dump(mode="json"),
        )
        if len(scored.results) > 1:
            payload["verification_results"] = [r.model_dump(mode="json") for r in scored.results]
        return JSONResponse(payload)

    return app
