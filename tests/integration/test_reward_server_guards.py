"""The reward service's guards over real HTTP: the bearer token, the body limit
and the per-request time limit. The judge is the bench endpoint (a real
OpenAI-compatible server) with one slow answer. ``verifleet serve`` with its token
from the environment is in test_reward_server.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
import uvicorn
from _support.redis_server import free_port
from _support.reward import CORRECT, JUDGE_ANSWERS, WRONG, geo_benchmark

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.reward import RewardConfig
from verifleet.reward.serve import create_app
from verifleet.schemas import ModelConfig

pytestmark = pytest.mark.integration

TOKEN = "t0ken-4-tests"
SLOW = "The capital is Paris, in France, I think, after a long pause."


@pytest.fixture(scope="module")
def judge() -> Iterator[RunningEndpoint]:
    slow = {"fields": {"city": "Paris", "country": "France"}, "delay_ms": 8000}
    with run_endpoint_in_thread(EndpointConfig(answers={**JUDGE_ANSWERS, SLOW: slow})) as ep:
        yield ep


@contextmanager
def _serving(judge: RunningEndpoint, **options: object) -> Iterator[str]:
    app = create_app(
        geo_benchmark(),
        [ModelConfig.parse(f"{judge.base_url}#judge")],
        RewardConfig(),
        **options,  # type: ignore[arg-type]
    )
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "service did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_every_route_but_health_needs_the_bearer_token(judge: RunningEndpoint) -> None:
    body = {"question_id": "geo", "response": CORRECT}
    with (
        _serving(judge, token=TOKEN, max_body_bytes=5_000) as base,
        httpx.Client(base_url=base, timeout=60, trust_env=False) as anon,
        httpx.Client(
            base_url=base, timeout=60, trust_env=False, headers={"authorization": f"Bearer {TOKEN}"}
        ) as authed,
    ):
        calls = judge.stats().calls
        for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": TOKEN}):
            denied = anon.post("/verify", json=body, headers=headers)
            assert denied.status_code == 401, denied.text
            assert "missing or invalid bearer token" in denied.json()["message"]
            assert denied.headers["www-authenticate"].startswith("Bearer")
        assert judge.stats().calls == calls  # nothing was scored
        assert anon.get("/openapi.json").status_code == 401
        assert anon.get("/docs").status_code == 401
        # Refused before the body is read: an unauthenticated upload is not a 413.
        assert anon.post("/verify", content=b"x" * 50_000).status_code == 401
        health = anon.get("/health")
        assert health.status_code == 200
        assert health.json().keys() == {"status", "version"}  # no benchmark details

        scored = authed.post("/verify", json=body)
        assert scored.status_code == 200, scored.text
        assert scored.json()["reward"] == 1.0
        assert authed.get("/health").json()["benchmark"] == "geo"
        assert authed.get("/openapi.json").status_code == 200
        big = authed.post("/verify", json={"question_id": "geo", "response": "x" * 6_000})
        assert big.status_code == 413
        assert "larger than 5000 bytes" in big.json()["message"]


def test_a_request_over_the_time_limit_gets_504_and_the_server_goes_on(
    judge: RunningEndpoint,
) -> None:
    with (
        _serving(judge, request_timeout=1.0) as base,
        httpx.Client(base_url=base, timeout=60, trust_env=False) as client,
    ):
        slow = client.post("/verify", json={"question_id": "geo", "response": SLOW})
        # Answered while the judge still holds the 8 s call: the request was not
        # waited for, its scoring thread was abandoned.
        assert judge.stats().in_flight >= 1
        assert slow.status_code == 504, slow.text
        assert "time limit of 1s" in slow.json()["message"]
        assert client.get("/health").status_code == 200
        for text, reward in ((CORRECT, 1.0), (WRONG, 0.0)):
            fast = client.post("/verify", json={"question_id": "geo", "response": text})
            assert fast.status_code == 200, fast.text
            assert fast.json()["reward"] == reward
