"""Run in NeMo Gym's own venv (``python nemo_gym_checks.py URL OUT.json``): its
contract helpers pointed at a running ``verifleet serve``, and its own
``compute_aggregate_metrics`` on rows also sent to the server's
``/aggregate_metrics``. Writes what it saw as JSON for the test to judge.

``check_resources_session_contract`` drives an ASGI app in process; here that
app forwards each request, unchanged, to the server over HTTP and hands back
the server's reply (status, headers and cookies included), so every answer it
judges is the server's own. ``exercise_verifier_fixture`` gets a verifier whose
``verify`` posts the case's request to ``/verify``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
from nemo_gym.base_resources_server import ResourcesSeedSessionRequest
from nemo_gym.reward_profile import compute_aggregate_metrics
from nemo_gym.testing.session_conformance import check_resources_session_contract
from nemo_gym.verifier_fixture import VerifierFixture, exercise_verifier_fixture
from pydantic import BaseModel, ConfigDict


class Forward:
    """An ASGI app that forwards every HTTP request to ``base``."""

    def __init__(self, base: str) -> None:
        self.base = base

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k.decode(), v.decode()) for k, v in scope["headers"] if k != b"host"]
        async with httpx.AsyncClient(trust_env=False, timeout=60) as client:
            reply = await client.request(
                scope["method"], self.base + scope["path"], content=body, headers=headers
            )
        await send(
            {
                "type": "http.response.start",
                "status": reply.status_code,
                "headers": [(k.encode(), v.encode()) for k, v in reply.headers.multi_items()],
            }
        )
        await send({"type": "http.response.body", "body": reply.content})


class Request(BaseModel):
    model_config = ConfigDict(extra="allow")


class Verifier:
    def __init__(self, base: str) -> None:
        self.base = base

    async def verify(self, request: Request) -> dict[str, Any]:
        async with httpx.AsyncClient(trust_env=False, timeout=60) as client:
            reply = await client.post(self.base + "/verify", json=request.model_dump())
        if reply.status_code != 200:
            raise RuntimeError(f"{reply.status_code}: {reply.text}")
        return reply.json()

    async def seed(self, request: Request) -> None:
        async with httpx.AsyncClient(trust_env=False, timeout=60) as client:
            reply = await client.post(self.base + "/seed_session", json=request.model_dump())
        reply.raise_for_status()


def main() -> None:
    base, out, cases, rows_path = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    seen: dict[str, Any] = {}
    seed = ResourcesSeedSessionRequest(
        resources_session_id="rs-contract", episode_id="ep-1", task_id="t-1", task_data={}
    )
    check_resources_session_contract(Forward(base), seed, keeps_state=False)  # type: ignore[arg-type]
    seen["session_contract"] = "passed"
    verifier = Verifier(base)
    fixture = VerifierFixture(
        server_factory=lambda: verifier,
        request_model=Request,
        cases_path=cases,
        reseed=lambda server, request: server.seed(request),
    )
    results = asyncio.run(
        exercise_verifier_fixture(fixture, reward_range=(0.0, 1.0), determinism="seeded")
    )
    seen["verifier_fixture"] = [[r.name, r.kind, list(r.observed_rewards)] for r in results]
    rows = json.loads(Path(rows_path).read_text())
    seen["nemo_metrics"] = compute_aggregate_metrics(rows).model_dump(mode="json")
    reply = httpx.post(base + "/aggregate_metrics", json={"verify_responses": rows}, timeout=60)
    seen["server_metrics"] = reply.json()
    out.write_text(json.dumps(seen))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory():
        main()
