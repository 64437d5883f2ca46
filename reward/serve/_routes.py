"""The reward service's hot routes as plain ASGI: ``POST /verify``,
``POST /verify/batch``, ``GET /health`` and ``GET /ready``.

Why not FastAPI routes: under load, FastAPI's and Starlette's per-request layers
(middleware stack, dependency solving, request and response objects) cost the
server more CPU than scoring a judge-free rollout. These four paths are served
here, behind the same guards (Host check, bearer token, admission, body limit);
the FastAPI app keeps their declarations for the OpenAPI document and serves
everything else (``/openapi.json``, ``/docs``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

import orjson
from pydantic import ValidationError

from verifleet._version import __version__
from verifleet.pipeline import call_cache_failures
from verifleet.reward import (
    Failure,
    InvalidRequestError,
    RewardScorer,
    ScoredRollout,
    UnknownQuestionError,
)
from verifleet.web import Receive, Scope, Send, bearer_token_ok

from ._admission import Admission
from ._batch import BATCH_PATH, REQUEST, BatchReply, score_batch, validation_problems
from ._nemo import NemoGymRoutes, add_component_fields, failsafe_fields
from ._protocol import DISCONNECT_EXTENSION, OnDisconnect
from ._scoring import score_on_loop

__all__ = [
    "FAILURE_STATUS",
    "HEALTH_PATH",
    "READY_PATH",
    "VERIFY_PATH",
    "BodyRoute",
    "InfraErrors",
    "ServiceRoutes",
    "reply_fields",
]

_log = logging.getLogger(__name__)

HEALTH_PATH = "/health"
READY_PATH = "/ready"
VERIFY_PATH = "/verify"

InfraErrors = Literal["status", "null", "failsafe"]

#: A POST route served from its whole body: (body, receive, the server's
#: disconnect callback) -> (status, payload, headers), None when the client left.
BodyRoute = Callable[[bytes, Receive, OnDisconnect | None], Awaitable[BatchReply]]

#: The status of an infrastructure failure when ``infra_errors="status"``.
FAILURE_STATUS = {"judge_unreachable": 502, "judge_refused": 502, "executor": 503, "timeout": 504}


def reply_fields(scored: ScoredRollout) -> dict[str, object]:
    """What a scored request's reply adds to the request's own fields."""
    fields: dict[str, object] = {
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


def encode_json(payload: object) -> bytes:
    """``payload`` as UTF-8 JSON (orjson; a value it refuses, such as an integer
    beyond 64 bits or a non-string key, through the standard library instead).
    A NaN or infinite float is written as ``null``.

    Raises:
        TypeError, ValueError: ``payload`` is not JSON data.
    """
    try:
        return orjson.dumps(payload)
    except orjson.JSONEncodeError:
        return json.dumps(payload, ensure_ascii=False, allow_nan=False).encode()


def decode_json(raw: bytes) -> object:
    """A request body's JSON (orjson; what it refuses, such as ``NaN`` or an
    integer beyond 64 bits, through the standard library).

    Raises:
        ValueError: not JSON.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


async def _send(
    send: Send, status: int, payload: object, headers: dict[str, str] | None = None
) -> None:
    body = encode_json(payload)
    head = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    for name, value in (headers or {}).items():
        head.append((name.encode(), value.encode()))
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


def _on_disconnect(scope: Scope) -> OnDisconnect | None:
    """The server's disconnect callback (``verifleet serve``'s protocol), None
    under a server without it: the route then watches ``receive`` instead."""
    on_disconnect: OnDisconnect | None = scope.get("extensions", {}).get(DISCONNECT_EXTENSION)
    return on_disconnect


async def _body(receive: Receive) -> bytes | None:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None  # the client went away
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


class ServiceRoutes:
    """Serves the hot routes of one reward service (an ASGI app for those paths).

    Args:
        scorer: The service's scorer.
        admission: The service's admission counter.
        timeout: Seconds one rollout may take.
        max_batch: Rollouts one batch may carry.
        infra_errors: How ``/verify`` answers an infrastructure failure
            (``failsafe``: NeMo Gym's judge-failure shape, :mod:`._nemo`).
        token: The bearer token (``/health`` details need it, or one of the
            tokens when several), if any.
    """

    def __init__(
        self,
        scorer: RewardScorer,
        admission: Admission,
        *,
        timeout: float,
        max_batch: int,
        infra_errors: InfraErrors,
        token: str | Sequence[str] | None,
    ) -> None:
        self.scorer = scorer
        self.admission = admission
        self.timeout = timeout
        self.max_batch = max_batch
        self.infra_errors = infra_errors
        tokens = [token] if isinstance(token, str) else list(token or ())
        self._secret = tuple(t.encode() for t in tokens) or None
        self._routes = {
            ("POST", VERIFY_PATH): self.verify,
            ("POST", BATCH_PATH): self.verify_batch,
            ("GET", HEALTH_PATH): self.health,
            ("GET", READY_PATH): self.ready,
            **NemoGymRoutes().routes(),
        }

    def add_body_route(self, path: str, handle: BodyRoute) -> None:
        """Serve ``POST path`` with ``handle``, behind the same guards (another
        client's protocol, in a module of its own)."""

        async def route(scope: Scope, receive: Receive, send: Send) -> None:
            raw = await _body(receive)
            if raw is None:
                return
            reply = await handle(raw, receive, _on_disconnect(scope))
            if reply is not None:
                status, payload, headers = reply
                await _send(send, status, payload, headers)

        self._routes[("POST", path)] = route

    def handles(self, scope: Scope) -> bool:
        """Whether ``scope`` is one of the routes served here."""
        return (scope.get("method"), scope.get("path")) in self._routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = self._routes[(scope["method"], scope["path"])]
        try:
            await handler(scope, receive, send)
        except Exception as exc:  # a fault of the server itself, never the client's
            _log.exception("%s failed", scope["path"], exc_info=exc)
            await _send(send, 500, {"message": f"internal error: {type(exc).__name__}"})

    async def health(self, scope: Scope, _receive: Receive, send: Send) -> None:
        """Liveness; with the token (or without one configured) what is verified."""
        payload: dict[str, object] = {"status": "ok", "version": __version__}
        if self._secret is None or bearer_token_ok(scope.get("headers") or [], self._secret):
            benchmark, scorer = self.scorer.benchmark, self.scorer
            payload.update(
                benchmark=benchmark.name,
                questions=len(benchmark.questions),
                reward_mode=scorer.reward_config.mode,
                parsing_models=[m.model_name for m in scorer.parsing_models],
                call_cache_failures=call_cache_failures(),
            )
        await _send(send, 200, payload)

    async def ready(self, _scope: Scope, _receive: Receive, send: Send) -> None:
        """200 while a rollout would be admitted, else 503 with ``Retry-After``."""
        status, payload, headers = self.admission.readiness()
        await _send(send, status, payload, headers)

    async def verify(self, scope: Scope, receive: Receive, send: Send) -> None:
        """One rollout: its request back with the reward (see the module of the service)."""
        raw = await _body(receive)
        if raw is None:
            return
        try:
            data = decode_json(raw)
        except ValueError:
            await _send(send, 400, {"message": "the request body is not valid JSON"})
            return
        try:
            body = REQUEST.validate_python(data)
        except ValidationError as exc:
            detail = [
                {k: v for k, v in e.items() if k in ("loc", "msg", "type")}
                for e in exc.errors(include_url=False, include_context=False)
            ]
            message = "malformed request: " + "; ".join(validation_problems(exc))
            await _send(send, 422, {"message": message, "detail": detail})
            return
        try:
            outcome = await score_on_loop(
                self.scorer,
                body,
                timeout=self.timeout,
                receive=receive,
                on_disconnect=_on_disconnect(scope),
            )
        except InvalidRequestError as exc:
            status = 404 if isinstance(exc, UnknownQuestionError) else 422
            await _send(send, status, {"message": str(exc)})
            return
        if outcome is None:
            return  # the client is gone: nobody reads a reply
        payload = body.model_dump(mode="json", exclude_unset=True)
        if isinstance(outcome, Failure):
            payload.update(reward=None, failure=outcome.model_dump())
            if self.infra_errors == "failsafe":
                failsafe_fields(payload, outcome)
                await _send(send, 200, payload)
            elif self.infra_errors == "null":
                await _send(send, 200, payload)
            else:
                payload["message"] = outcome.reason
                await _send(send, 504, payload)
            return
        payload.update(reply_fields(outcome))
        add_component_fields(payload, outcome)
        failure = outcome.failure
        if failure is not None and self.infra_errors == "failsafe":
            failsafe_fields(payload, failure)
        if failure is None or self.infra_errors != "status":
            await _send(send, 200, payload)
            return
        payload["message"] = f"not verified ({failure.kind}): {failure.reason}; no reward was given"
        status = FAILURE_STATUS[failure.kind]
        await _send(send, status, payload, {"retry-after": "1"} if status == 503 else None)

    async def verify_batch(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Many rollouts, one entry each, in order (:mod:`._batch`)."""
        raw = await _body(receive)
        if raw is None:
            return
        reply = await score_batch(
            raw,
            self.scorer,
            self.admission,
            timeout=self.timeout,
            max_batch=self.max_batch,
            receive=receive,
            on_disconnect=_on_disconnect(scope),
        )
        if reply is not None:
            status, payload, headers = reply
            await _send(send, status, payload, headers)
