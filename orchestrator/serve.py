"""The reward service: ``POST /verify``, ``GET /health`` and the OpenAPI document.

Status codes: 200 with the reward; 400 for a body that is not JSON; 404 for an
unknown question id; 413 for a body over the size limit; 422 for a body of the
wrong shape or a response with nothing to verify; 500 only for faults of the
server itself. A judge that fails is not a server fault: the result records it
and the reward is the config's ``error_reward``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

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
from verifleet.schemas import Benchmark, ModelConfig, VerificationResult

__all__ = ["DEFAULT_MAX_BODY_BYTES", "HealthResponse", "VerifyResponse", "create_app"]

_log = logging.getLogger(__name__)

#: A long agent trajectory is tens of kilobytes; 8 MiB leaves room without letting
#: one request hold a worker thread's memory hostage.
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class VerifyResponse(BaseModel):
    """The request's own fields, plus the reward and the verification record."""

    model_config = ConfigDict(extra="allow")

    reward: float
    question_id: str
    reward_breakdown: list[RewardBreakdown]
    equivalence: EquivalenceVerdict | None = None
    verification_result: VerificationResult


class HealthResponse(BaseModel):
    """``GET /health``."""

    status: str
    version: str
    benchmark: str
    questions: int
    reward_mode: RewardMode
    parsing_models: list[str]


class BodyLimit:
    """ASGI middleware answering 413 to bodies over ``max_bytes``: by the declared
    ``Content-Length`` before reading, else while reading (chunked uploads).

    The body is read here and replayed to the app: FastAPI turns any error raised
    while it reads the body into a 400, which would hide the 413.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._reject(send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._reject(send)
                return
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)

    async def _reject(self, send: Send) -> None:
        body = json.dumps({"message": f"request body larger than {self.max_bytes} bytes"}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})


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
) -> FastAPI:
    """The reward service for ``benchmark``.

    Args:
        benchmark: Questions the responses answer.
        parsing_models: The judges (the reward is their mean when several).
        reward_config: How results become rewards.
        resources: Pipeline caches (use ``reward_resources(RedisJudgeCache(...))``
            to share the judge-call cache through Redis).
        max_body_bytes: Larger request bodies get 413.

    Raises:
        ConfigError: the reward config does not fit the benchmark.
    """
    scorer = RewardScorer(benchmark, parsing_models, reward_config, resources=resources)
    app = FastAPI(
        title="verifleet reward service",
        version=__version__,
        description="Verifies agent responses against a benchmark and returns a reward in [0, 1].",
    )
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(InvalidRequestError, _invalid_request)
    app.add_exception_handler(Exception, _server_fault)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    app.state.scorer = scorer

    @app.get("/health", response_model=HealthResponse)
    def health() -> HealthResponse:
        """Liveness and what the service verifies against."""
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
            404: {"description": "unknown question id"},
            413: {"description": "body too large"},
            422: {"description": "malformed request or nothing to verify"},
        },
    )
    def verify(body: VerifyRequest) -> JSONResponse:
        """Verify the response of ``body`` and return the request with its reward.

        Runs in the server's thread pool: scoring blocks on judge calls.
        """
        scored = scorer.score(body)
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
