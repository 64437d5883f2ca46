"""NeMo Gym's resources-server contract on ``verifleet serve``, besides ``/verify``
(nemo-gym 0.7.0, ``SimpleResourcesServer``; docs/reward.md, "NeMo Gym", lists
what each route is sent and answers).

``POST /seed_session`` and ``POST /close_session`` keep no per-rollout state:
the session cookie carries the session id and nothing is stored, so seeding
again is the same session. ``POST /aggregate_metrics`` is :mod:`._nemo_metrics`;
``GET /reverify_mode`` answers ``"stateless"``. On ``/verify`` replies, hybrid
rewards get NeMo Gym's ``reward_components`` and each component as a top-level
number, and ``--infra-errors failsafe`` answers an infrastructure failure as
NeMo Gym's ``judge_failsafe`` answers a judge error.
"""

from __future__ import annotations

import json
import re
import statistics
import uuid
from collections.abc import Awaitable, Callable

from verifleet.reward import Failure, ScoredRollout
from verifleet.web import Receive, Scope, Send

from ._nemo_metrics import aggregate_metrics

__all__ = [
    "AGGREGATE_PATH",
    "CLOSE_PATH",
    "REVERIFY_PATH",
    "SEED_PATH",
    "SESSION_COOKIE",
    "NemoGymRoutes",
    "add_component_fields",
    "failsafe_fields",
]

SEED_PATH = "/seed_session"
CLOSE_PATH = "/close_session"
AGGREGATE_PATH = "/aggregate_metrics"
REVERIFY_PATH = "/reverify_mode"

#: The cookie ``/seed_session`` sets: the session id (nothing secret, nothing stored).
SESSION_COOKIE = "verifleet_session"

#: NeMo Gym's ``failure_kind`` for each verifleet failure kind (its shared vocabulary).
NEMO_FAILURE_KIND = {
    "judge_unreachable": "judge_failed",
    "judge_refused": "judge_failed",
    "executor": "verifier_error",
    "timeout": "verifier_error",
}

#: NeMo Gym cuts a failure's text to this many characters.
_REASON_CHARS = 2000

_COOKIE_SAFE = re.compile(r"[^A-Za-z0-9._~-]")

Handler = Callable[[Scope, Receive, Send], Awaitable[None]]


def add_component_fields(payload: dict[str, object], scored: ScoredRollout) -> None:
    """A hybrid reward's components at the top of a ``/verify`` reply: the
    ``reward_components`` mapping NeMo Gym's ``BaseMultiRewardVerifyResponse``
    requires (values as counted: a missing trait is 0.0; several judges: their
    mean) and each component as a top-level number where the name is free (a
    component named like a field of the rollout is left in the mapping only)."""
    if scored.failure is not None or not scored.breakdowns:
        return
    names = list(scored.breakdowns[0].components)
    if not names:
        return
    components = {
        name: statistics.fmean(b.components.get(name) or 0.0 for b in scored.breakdowns)
        for name in names
    }
    for name, value in components.items():
        if name not in payload:
            payload[name] = value
    payload["reward_components"] = components


def failsafe_fields(payload: dict[str, object], failure: Failure) -> None:
    """An infrastructure failure as NeMo Gym's ``judge_failsafe`` answers a judge
    error: reward 0.0 with ``mask_sample: true`` (not a measurement: left out of
    its metrics), ``failure_kind``/``failure_reason``, ``instance_config.mask_sample``
    for older NeMo RL readers, and ``_ng_failure_class: "judge_failed"`` so that
    collection files it as a failure and ``gym eval reverify --judge-failed-only``
    scores it again. verifleet's own ``failure`` stays in the reply."""
    reason = failure.reason[:_REASON_CHARS]
    config = payload.get("instance_config")
    payload.update(
        reward=0.0,
        mask_sample=True,
        failure_kind=NEMO_FAILURE_KIND[failure.kind],
        failure_reason=reason,
        instance_config={**(config if isinstance(config, dict) else {}), "mask_sample": True},
        _ng_failure_class="judge_failed",
        _ng_failure_judge_error=reason,
        failure=failure.model_dump(),
    )


async def _send(
    send: Send, status: int, payload: object, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps(payload).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": head + (headers or [])})
    await send({"type": "http.response.body", "body": body})


async def _json_body(receive: Receive, send: Send) -> tuple[bool, object]:
    """(True, the JSON body; None when empty), or (False, _) once the client is
    gone or has been answered 400."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return False, None
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    raw = b"".join(chunks)
    if not raw.strip():
        return True, None
    try:
        return True, json.loads(raw)
    except ValueError:
        await _send(send, 400, {"message": "the request body is not valid JSON"})
        return False, None


def _session_id(body: dict[str, object], field: str = "resources_session_id") -> str | bool | None:
    """The body's session id; None when absent; False when present but not a
    non-empty string."""
    if field not in body:
        return None
    value = body[field]
    if not isinstance(value, str) or not value:
        return False
    return value


class NemoGymRoutes:
    """The NeMo Gym routes of one reward service (``/seed_session``,
    ``/close_session``, ``/aggregate_metrics``, ``GET /reverify_mode``)."""

    def routes(self) -> dict[tuple[str, str], Handler]:
        """(method, path) -> handler, for :class:`~._routes.ServiceRoutes`."""
        return {
            ("POST", SEED_PATH): self.seed_session,
            ("POST", CLOSE_PATH): self.close_session,
            ("POST", AGGREGATE_PATH): self.aggregate,
            ("GET", REVERIFY_PATH): self.reverify_mode,
        }

    async def seed_session(self, _scope: Scope, receive: Receive, send: Send) -> None:
        """Both seed bodies; a session cookie either way. 422 for a session
        protocol body whose ``resources_session_id`` is not a non-empty string."""
        ok, body = await _json_body(receive, send)
        if not ok:
            return
        session = _session_id(body) if isinstance(body, dict) else None
        if session is False:
            message = "resources_session_id must be a non-empty string"
            await _send(send, 422, {"message": message})
            return
        reply: dict[str, object] = {}
        if isinstance(session, str):
            reply["resources_session_id"] = session
        value = _COOKIE_SAFE.sub("_", session) if isinstance(session, str) else uuid.uuid4().hex
        cookie = f"{SESSION_COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict"
        await _send(send, 200, reply, [(b"set-cookie", cookie.encode())])

    async def close_session(self, _scope: Scope, receive: Receive, send: Send) -> None:
        """Idempotent: the session id back, seeded or not; 422 without one."""
        ok, body = await _json_body(receive, send)
        if not ok:
            return
        session = _session_id(body) if isinstance(body, dict) else None
        if not isinstance(session, str):
            message = "close_session needs {resources_session_id, episode_id}"
            await _send(send, 422, {"message": message})
            return
        await _send(send, 200, {"resources_session_id": session})

    async def aggregate(self, _scope: Scope, receive: Receive, send: Send) -> None:
        """NeMo Gym's ``AggregateMetrics``; 422 unless ``verify_responses`` is a
        list of objects, or when two share a task and rollout index."""
        ok, body = await _json_body(receive, send)
        if not ok:
            return
        rows = body.get("verify_responses") if isinstance(body, dict) else None
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            message = "aggregate_metrics needs {verify_responses: [objects]}"
            await _send(send, 422, {"message": message})
            return
        try:
            metrics = aggregate_metrics(rows)
        except ValueError as exc:
            await _send(send, 422, {"message": str(exc)})
            return
        await _send(send, 200, metrics)

    async def reverify_mode(self, _scope: Scope, _receive: Receive, send: Send) -> None:
        """``"stateless"``: a rollout's reward depends on the rollout alone."""
        await _send(send, 200, "stateless")
