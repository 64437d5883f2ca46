"""NeMo Gym's resources-server contract on the reward service, over real HTTP:
the session routes, ``/reverify_mode``, hybrid components at the top of a
reply, judge failures in NeMo Gym's failsafe shape, the client-network
allow-list and the admission queue. The bench endpoint (a real
OpenAI-compatible server) is the judge; an unreachable judge is a port nobody
listens on. (NeMo Gym's own tooling against the server: test_nemo_gym.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
from _support.redis_server import free_port
from _support.reward import (
    CORRECT,
    JUDGE_ANSWERS,
    PARTIAL,
    WRONG,
    geo_service,
    nemo_request,
)

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.reward import RewardConfig
from verifleet.reward.serve import parse_networks
from verifleet.schemas import ConfigError

pytestmark = pytest.mark.integration

HYBRID = RewardConfig.build(
    {
        "mode": "hybrid",
        "components": [
            {"name": "correctness", "source": "verify_granular_result", "weight": 0.5},
            {"name": "concise", "source": "trait", "trait": "concise", "weight": 0.5},
        ],
    }
)


@pytest.fixture(scope="module")
def judge() -> Iterator[RunningEndpoint]:
    with run_endpoint_in_thread(EndpointConfig(answers=JUDGE_ANSWERS)) as endpoint:
        yield endpoint


def _client(base: str, **headers: str) -> httpx.Client:
    return httpx.Client(base_url=base, timeout=60, trust_env=False, headers=headers)


def test_both_seed_bodies_get_a_session_cookie_and_close_is_idempotent(
    judge: RunningEndpoint,
) -> None:
    seed = {
        "resources_session_id": "rs-1",
        "episode_id": "ep-1",
        "task_id": "t-1",
        "task_data": {"question_id": "geo"},
    }
    with geo_service(judge.base_url) as base, _client(base) as client:
        legacy = client.post("/seed_session", json=nemo_request(CORRECT, question_id="geo"))
        session = client.post("/seed_session", json=seed)
        again = client.post("/seed_session", json=seed)
        closes = [
            client.post("/close_session", json={"resources_session_id": sid, "episode_id": "ep-1"})
            for sid in ("rs-1", "rs-1", "never-seeded")
        ]
        bad_seed = client.post("/seed_session", json={**seed, "resources_session_id": ""})
        bad_close = client.post("/close_session", json={"episode_id": "ep-1"})
        mode = client.get("/reverify_mode")
    assert legacy.status_code == 200 and legacy.json() == {}
    assert "verifleet_session" in legacy.cookies
    assert session.status_code == 200 and session.json() == {"resources_session_id": "rs-1"}
    assert session.cookies["verifleet_session"] == "rs-1"
    assert again.json() == {"resources_session_id": "rs-1"}
    assert [c.status_code for c in closes] == [200, 200, 200]
    assert [c.json()["resources_session_id"] for c in closes] == ["rs-1", "rs-1", "never-seeded"]
    assert bad_seed.status_code == 422 and bad_close.status_code == 422
    assert mode.status_code == 200 and mode.json() == "stateless"


def test_hybrid_components_are_top_level_numbers_and_unknown_fields_come_back(
    judge: RunningEndpoint,
) -> None:
    body = nemo_request(PARTIAL, question_id="geo", _ng_task_index=3, agent_ref={"name": "a"})
    with geo_service(judge.base_url, HYBRID) as base, _client(base) as client:
        reply = client.post("/verify", json=body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    # PARTIAL names the city but not the country (granular 0.5) and is concise (1.0).
    assert data["reward_components"] == {"correctness": 0.5, "concise": 1.0}
    assert data["correctness"] == 0.5 and data["concise"] == 1.0
    assert data["reward"] == pytest.approx(0.75)
    assert data["_ng_task_index"] == 3 and data["agent_ref"] == {"name": "a"}
    assert data["response"] == body["response"]
    # Binary rewards have no components: nothing is added.
    with geo_service(judge.base_url) as base, _client(base) as client:
        plain = client.post("/verify", json=body).json()
    assert "reward_components" not in plain and plain["reward"] == 0.0


def test_a_judge_failure_in_failsafe_mode_is_a_masked_judge_failed_sample() -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    body = nemo_request(CORRECT, question_id="geo", instance_config={"seed": 7})
    with geo_service(dead, infra_errors="failsafe") as base, _client(base) as client:
        reply = client.post("/verify", json=body)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["reward"] == 0.0
    assert data["mask_sample"] is True
    assert data["failure_kind"] == "judge_failed"
    assert "connect" in data["failure_reason"].lower()
    assert data["_ng_failure_class"] == "judge_failed"
    assert data["_ng_failure_judge_error"] == data["failure_reason"]
    assert data["instance_config"] == {"seed": 7, "mask_sample": True}
    assert data["failure"]["kind"] == "judge_unreachable"
    # The same failure under the default setting is a 502, not a sample.
    with geo_service(dead) as base, _client(base) as client:
        assert client.post("/verify", json=body).status_code == 502


def test_an_allowed_network_needs_no_token_and_others_still_do(judge: RunningEndpoint) -> None:
    body = nemo_request(WRONG, question_id="geo")
    loopback = parse_networks(["127.0.0.0/8"])
    elsewhere = parse_networks(["10.0.0.0/8"])
    with (
        geo_service(judge.base_url, token="s3cret", allow_net=loopback) as base,
        _client(base) as client,
    ):
        allowed = client.post("/verify", json=body)
        seeded = client.post("/seed_session", json={})
    with geo_service(judge.base_url, token="s3cret", allow_net=elsewhere) as base:
        with _client(base) as client:
            no_token = client.post("/verify", json=body)
        with _client(base, authorization="Bearer s3cret") as client:
            with_token = client.post("/verify", json=body)
    with geo_service(judge.base_url, allow_net=elsewhere) as base, _client(base) as client:
        refused = client.post("/verify", json=body)
        health = client.get("/health")
    assert allowed.status_code == 200 and allowed.json()["reward"] == 0.0
    assert seeded.status_code == 200
    # Control: the same client outside the allowed networks needs the token.
    assert no_token.status_code == 401
    assert with_token.status_code == 200
    assert refused.status_code == 403 and "--allow-net" in refused.json()["message"]
    assert health.status_code == 200
    with pytest.raises(ConfigError, match="every address"):
        parse_networks(["0.0.0.0/0"])
    with pytest.raises(ConfigError, match="not an IP"):
        parse_networks(["my-laptop"])


async def _burst(base: str, count: int) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=base, timeout=120, trust_env=False) as client:
        bodies = [{"question_id": "geo", "response": f"{CORRECT} ({i})"} for i in range(count)]
        return await asyncio.gather(*(client.post("/verify", json=b) for b in bodies))


def test_requests_beyond_max_inflight_wait_in_the_queue_instead_of_503() -> None:
    # A slow judge (every call 300 ms) keeps each admitted request in flight.
    answers = {
        f"{CORRECT} ({i})": {"fields": {"city": "Paris", "country": "France"}} for i in range(6)
    }
    config = EndpointConfig(answers=answers, latency_ms=300)
    with run_endpoint_in_thread(config) as slow:
        with geo_service(slow.base_url, max_inflight=1, max_queued=8) as base:
            queued = asyncio.run(_burst(base, 6))
        # Control: without a queue the same burst is refused beyond the limit.
        with geo_service(slow.base_url, max_inflight=1) as base:
            refused = asyncio.run(_burst(base, 6))
        with geo_service(slow.base_url, max_inflight=1, max_queued=1) as base:
            overflow = asyncio.run(_burst(base, 6))
    assert [r.status_code for r in queued] == [200] * 6
    assert [r.json()["reward"] for r in queued] == [1.0] * 6
    assert sum(r.status_code == 503 for r in refused) >= 1
    assert sum(r.status_code == 503 for r in overflow) >= 1
