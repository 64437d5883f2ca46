"""The reward service: ``POST /verify``, ``POST /verify/batch``, ``GET /health``,
``GET /ready``, OpenRLHF's ``POST /get_reward`` (:mod:`._openrlhf`) and the
OpenAPI document.

Status codes: 200 with the reward; 400 for a body that is not JSON; 401 without
the bearer token (when the service has one; ``/health`` and ``/ready`` never need
it); 403 for a ``Host`` the server does not answer to (DNS rebinding); 404 for an
unknown question id; 413 for a body over the size limit; 422 for a body of the
wrong shape or a response with nothing to verify; 503 with ``Retry-After`` when
``max_inflight`` rollouts are being scored already, or the caller holds its fair
share of them while others are active (:mod:`._admission`); 500 only for faults of the
server itself. A request that could not be verified for an infrastructure reason
(judge unreachable or refusing, a sandbox executor failure, the deadline) is never
answered as a score: 502/503/504 with ``reward: null`` and the failure, or (with
``infra_errors="null"``) 200 with ``reward: null`` and the failure.

``/verify``, ``/verify/batch``, ``/health`` and ``/ready`` are served as plain ASGI
(:mod:`._routes`) behind the guards; the FastAPI app declares them for the
OpenAPI document and serves the rest. Every request is scored on the event loop
(:func:`~verifleet.pipeline.run_bridged`):
judge calls are asynchronous HTTP, sandbox calls run in worker threads, so neither
the number of threads nor a slow judge caps how many requests are in flight, and
``/health`` answers at once whatever the backlog. A request whose client went
away, or whose deadline passed, is cancelled where it waits: it makes no further
judge call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field

from verifleet._version import __version__
from verifleet.pipeline import PipelineResources, close_async_senders
from verifleet.reward import (
    EquivalenceVerdict,
    Failure,
    RewardBreakdown,
    RewardConfig,
    RewardMode,
    RewardScorer,
    VerifyRequest,
)
from verifleet.schemas import Benchmark, ConfigError, ModelConfig, VerificationResult
from verifleet.web import ASGIApp, BearerAuth, BodyLimit, HostCheck, Receive, Scope, Send

from ._access import CallerIdentity, ClientNetworks, FairBy, Network
from ._admission import Admission, AdmissionGate
from ._batch import BATCH_PATH
from ._defaults import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_INFLIGHT,
    DEFAULT_REQUEST_TIMEOUT,
)
from ._openrlhf import OPENRLHF_PATH, declare_openrlhf, openrlhf_route
from ._routes import (
    HEALTH_PATH,
    READY_PATH,
    VERIFY_PATH,
    InfraErrors,
    ServiceRoutes,
)

# The package's __init__ is the public API; this module defines the app.
__all__ = [
    "HealthResponse",
    "RewardService",
    "VerifyResponse",
    "create_app",
    "service_for",
]


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
    call_cache_failures: int | None = Field(
        None,
        description="reads and writes of the judge-call cache that failed in this "
        "process (each one a miss: the judge was asked)",
    )


class ReadyResponse(BaseModel):
    """``GET /ready``: 200 while a rollout would be admitted, 503 when saturated."""

    ready: bool
    inflight: int
    max_inflight: int
    queued: int
    rejected: int
    callers: int = Field(description="callers active for the fair shares (--fair-share)")


class BatchResponse(BaseModel):
    """``POST /verify/batch``: one entry per rollout, in order."""

    results: list[dict[str, Any]]


#: How the service is given its token, named in a 401's message.
_TOKEN_OPTION = "--token / VERIFLEET_SERVE_TOKEN"


def _guarded(
    app: ASGIApp,
    *,
    admission: Admission,
    max_body_bytes: int,
    token: Sequence[str] | None,
    allowed_hosts: Sequence[str],
    allow_net: Sequence[Network] = (),
    identify: CallerIdentity | None = None,
) -> ASGIApp:
    """``app`` behind the guards, outermost first: the Host check, the client
    network allow-list (peers in it need no token), the bearer token (401 before
    any body is read), admission (the caller identified; 503, or a wait in its
    queue, before any body is read), the body limit."""
    guarded: ASGIApp = BodyLimit(app, max_bytes=max_body_bytes)
    guarded = AdmissionGate(guarded, admission=admission, paths=[VERIFY_PATH], identify=identify)
    open_paths = [HEALTH_PATH, READY_PATH]
    checked: ASGIApp = guarded
    if token is not None:
        checked = BearerAuth(guarded, token=token, open_paths=open_paths, option=_TOKEN_OPTION)
    if allow_net:
        otherwise = checked if token is not None else None
        checked = ClientNetworks(guarded, otherwise, allow_net, open_paths=open_paths)
    return HostCheck(checked, allowed_hosts=allowed_hosts)


class RewardService(FastAPI):
    """The FastAPI app of the reward service, whose hot routes (``routes_fast``,
    behind ``guarded_fast``) are served without FastAPI's per-request layers."""

    routes_fast: ServiceRoutes
    guarded_fast: ASGIApp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.routes_fast.handles(scope):
            await self.guarded_fast(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def _declare_routes(app: FastAPI) -> None:
    """The hot routes as the OpenAPI document shows them (served by
    :class:`ServiceRoutes`: these functions are never called)."""

    @app.get(HEALTH_PATH, response_model=HealthResponse, response_model_exclude_none=True)
    async def health() -> HealthResponse:  # pragma: no cover - documentation only
        """Liveness, and (with the token, if the service has one) what the service
        verifies against. Answered on the event loop at once, whatever the backlog."""
        raise NotImplementedError

    @app.get(READY_PATH, response_model=ReadyResponse, responses={503: {"model": ReadyResponse}})
    async def ready() -> ReadyResponse:  # pragma: no cover - documentation only
        """Whether a rollout would be admitted now: 200, or 503 with ``Retry-After``
        while ``max_inflight`` rollouts are being scored."""
        raise NotImplementedError

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
    async def verify(body: VerifyRequest) -> VerifyResponse:  # pragma: no cover - docs only
        """Verify the response of ``body`` and return the request with its reward.

        Scoring runs on the event loop, bounded by the time limit (the judge calls
        get the same deadline) and cancelled if the client goes away."""
        raise NotImplementedError

    @app.post(
        BATCH_PATH,
        response_model=BatchResponse,
        responses={
            400: {"description": "body is not JSON"},
            413: {"description": "more rollouts than --max-batch or --max-inflight"},
            422: {"description": "not a list of rollouts"},
            503: {"description": "the batch does not fit under --max-inflight now"},
        },
    )
    async def verify_batch(rollouts: list[VerifyRequest]) -> BatchResponse:  # pragma: no cover
        """Verify a list of rollouts (or ``{"rollouts": [...]}``); one entry per
        rollout, in order: the verdict fields, or ``error``/``failure``."""
        raise NotImplementedError


def create_app(
    benchmark: Benchmark,
    parsing_models: Sequence[ModelConfig],
    reward_config: RewardConfig,
    *,
    resources: PipelineResources | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    token: str | Sequence[str] | None = None,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    max_inflight: int = DEFAULT_MAX_INFLIGHT,
    max_batch: int = DEFAULT_MAX_BATCH,
    infra_errors: InfraErrors = "status",
    allowed_hosts: Sequence[str] = (),
    sandbox_scope: str | None = None,
    allow_net: Sequence[Network] = (),
    max_queued: int = 0,
    inline_executors: int = 0,
    fair_share: FairBy = "address",
) -> RewardService:
    """The reward service for ``benchmark``.

    Args:
        benchmark: Questions the responses answer.
        parsing_models: The judges (the reward is their mean when several).
        reward_config: How results become rewards.
        resources: Pipeline caches (use ``reward_resources(RedisCallCache(...))``
            to share the judge calls' cache through Redis).
        max_body_bytes: Larger request bodies get 413.
        token: When set, every route but ``/health`` and ``/ready`` needs
            ``Authorization: Bearer <token>`` (else 401); several tokens (one
            per tenant): any of them, and each is a caller of its own for
            ``fair_share``.
        request_timeout: Seconds one rollout may take; a longer ``/verify`` gets
            504 (or its batch entry a ``timeout`` failure), its scoring cancelled.
        max_inflight: Rollouts scored at once; more get 503 with ``Retry-After``.
        max_batch: Rollouts one ``/verify/batch`` may carry.
        infra_errors: How ``/verify`` answers a request that could not be
            verified for an infrastructure reason: ``status`` (502 judge, 503
            executor, 504 deadline) or ``null`` (200); both with ``reward: null``
            and the ``failure``; or ``failsafe`` (200, NeMo Gym's judge-failure
            shape: reward 0.0 with ``mask_sample: true``, ``failure_kind``,
            ``failure_reason``).
        allowed_hosts: Host names accepted besides localhost and IP addresses
            (``*``: any).
        sandbox_scope: The benchmark's templates run in the executors'
            template process of this scope (:class:`~verifleet.reward.RewardScorer`);
            None: one process per template source.
        inline_executors: Executors of their own for inline questions (0: they
            share the benchmark's; see :class:`~verifleet.reward.RewardScorer`).
        allow_net, max_queued, fair_share: As :func:`service_for`.

    Raises:
        ConfigError: the reward config does not fit the benchmark, an empty
            token, or a limit that is not positive.
    """
    scorer = RewardScorer(
        benchmark,
        parsing_models,
        reward_config,
        resources=resources,
        sandbox_scope=sandbox_scope,
        inline_executors=inline_executors,
    )
    return service_for(
        scorer,
        max_body_bytes=max_body_bytes,
        token=token,
        request_timeout=request_timeout,
        max_inflight=max_inflight,
        max_batch=max_batch,
        infra_errors=infra_errors,
        allowed_hosts=allowed_hosts,
        allow_net=allow_net,
        max_queued=max_queued,
        fair_share=fair_share,
    )


def service_for(
    scorer: RewardScorer,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    token: str | Sequence[str] | None = None,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    max_inflight: int = DEFAULT_MAX_INFLIGHT,
    max_batch: int = DEFAULT_MAX_BATCH,
    infra_errors: InfraErrors = "status",
    allowed_hosts: Sequence[str] = (),
    allow_net: Sequence[Network] = (),
    max_queued: int = 0,
    fair_share: FairBy = "address",
) -> RewardService:
    """The reward service around a scorer built already (``verifleet serve``
    builds one with its cache, pricing and sandbox scope); the other options are
    :func:`create_app`'s.

    Args:
        allow_net: Client networks whose requests need no token (NeMo Gym's
            agents send none); without a token, other peers get 403.
        max_queued: Requests beyond ``max_inflight`` that wait for a place (at
            most ``request_timeout`` seconds) instead of getting 503 at once.
        fair_share: How callers are told apart for their fair shares of the
            in-flight places and the sandbox executors (``address``,
            ``connection``, ``forwarded-for``: :class:`~._access.CallerIdentity`;
            ``off``: first come, first served); a caller alone gets all of them.

    Raises:
        ConfigError: an empty token, a limit that is not positive, an unknown
            ``infra_errors`` or ``fair_share``.
    """
    tokens = [token] if isinstance(token, str) else list(token or ())
    if any(not t.strip() for t in tokens):
        raise ConfigError("the bearer token is empty")
    token = tokens or None
    if min(max_body_bytes, request_timeout, max_inflight, max_batch) <= 0:
        raise ConfigError(
            "max_body_bytes, request_timeout, max_inflight and max_batch must be positive"
        )
    if infra_errors not in ("status", "null", "failsafe"):
        raise ConfigError(
            f"infra_errors must be 'status', 'null' or 'failsafe', not {infra_errors!r}"
        )
    if max_queued < 0:
        raise ConfigError("max_queued must be 0 or more")
    identify = CallerIdentity(fair_share, tokens)
    admission = Admission(
        max_inflight, max_queued=max_queued, queue_timeout=request_timeout, fair=identify.fair
    )
    app = RewardService(
        title="verifleet reward service",
        version=__version__,
        description="Verifies agent responses against a benchmark and returns a reward in [0, 1].",
    )
    routes = ServiceRoutes(
        scorer,
        admission,
        timeout=request_timeout,
        max_batch=max_batch,
        infra_errors=infra_errors,
        token=token,
    )
    routes.add_body_route(
        OPENRLHF_PATH,
        openrlhf_route(scorer, admission, timeout=request_timeout, max_batch=max_batch),
    )
    app.routes_fast = routes
    guards: dict[str, Any] = {
        "admission": admission,
        "max_body_bytes": max_body_bytes,
        "token": token,
        "allowed_hosts": allowed_hosts,
        "allow_net": allow_net,
        "identify": identify,
    }
    app.guarded_fast = _guarded(routes, **guards)
    # The rest (/openapi.json, /docs) behind the same guards; without a token
    # and with an allow-list, only the allowed networks read them.
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    if token is not None:
        app.add_middleware(
            BearerAuth, token=token, open_paths=[HEALTH_PATH, READY_PATH], option=_TOKEN_OPTION
        )
    elif allow_net:
        app.add_middleware(ClientNetworks, otherwise=None, networks=allow_net)
    app.add_middleware(HostCheck, allowed_hosts=allowed_hosts)
    app.state.scorer = scorer
    app.state.admission = admission
    app.router.add_event_handler("shutdown", close_async_senders)
    _declare_routes(app)
    declare_openrlhf(app)
    return app
