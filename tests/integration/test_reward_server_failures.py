"""The reward service never answers an infrastructure failure as a score, and its
batch endpoint scores many rollouts in one request. Over real HTTP, with the bench
endpoint (a real OpenAI-compatible server) as the judge, injecting refusals,
5xx replies and slow answers; an unreachable judge is a port nobody listens on."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from _support.redis_server import free_port
from _support.reward import (
    CORRECT,
    JUDGE_ANSWERS,
    PARTIAL,
    WRONG,
    geo_service,
)

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread

pytestmark = pytest.mark.integration

SLOW = "The capital is Paris, in France, said slowly."


@contextmanager
def _judge(slow_ms: float = 0.0, **config: Any) -> Iterator[RunningEndpoint]:
    slow = {"fields": {"city": "Paris", "country": "France"}, "delay_ms": slow_ms}
    answers = {**JUDGE_ANSWERS, SLOW: slow}
    with run_endpoint_in_thread(EndpointConfig(answers=answers, **config)) as endpoint:
        yield endpoint


def _post(base: str, path: str, body: Any, timeout: float = 60) -> httpx.Response:
    return httpx.post(base + path, json=body, timeout=timeout, trust_env=False)


def test_an_unreachable_judge_gets_no_reward_but_the_failure() -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    body = {"question_id": "geo", "response": CORRECT}
    with geo_service(dead) as base:
        reply = _post(base, "/verify", body)
    assert reply.status_code == 502, reply.text
    data = reply.json()
    assert data["reward"] is None
    assert data["failure"]["kind"] == "judge_unreachable"
    assert "connect" in data["failure"]["reason"].lower()
    assert data["reward_breakdown"] == []
    assert "no reward was given" in data["message"]
    with geo_service(dead, infra_errors="null") as base:
        reply = _post(base, "/verify", body)
    assert reply.status_code == 200
    assert reply.json()["reward"] is None
    assert reply.json()["failure"]["kind"] == "judge_unreachable"


def test_a_failing_or_refusing_judge_is_named_and_a_bad_reply_stays_a_verdict() -> None:
    body = {"question_id": "geo", "response": CORRECT}
    with _judge(rate_5xx=1.0) as judge, geo_service(judge.base_url) as base:
        reply = _post(base, "/verify", body)
    assert reply.status_code == 502
    assert reply.json()["failure"]["kind"] == "judge_unreachable"
    assert "503" in reply.json()["failure"]["reason"]
    # A judge that refuses the prompt (400: context too long) is not a verdict either.
    with _judge(context_chars=20) as judge, geo_service(judge.base_url) as base:
        reply = _post(base, "/verify", body)
    assert reply.status_code == 502
    assert reply.json()["failure"]["kind"] == "judge_refused"
    # A judge that answers, but with values the template rejects, is a verdict: 0.0.
    with _judge() as judge, geo_service(judge.base_url) as base:
        reply = _post(base, "/verify", {"question_id": "geo", "response": "no fields known"})
    assert reply.status_code == 200, reply.text
    assert reply.json()["reward"] == 0.0
    assert "failure" not in reply.json()


def test_the_deadline_is_a_timeout_failure_not_a_zero() -> None:
    with _judge(slow_ms=4000) as judge, geo_service(judge.base_url, request_timeout=1.0) as base:
        reply = _post(base, "/verify", {"question_id": "geo", "response": SLOW})
        fast = _post(base, "/verify", {"question_id": "geo", "response": CORRECT})
    assert reply.status_code == 504, reply.text
    assert reply.json()["reward"] is None
    assert reply.json()["failure"]["kind"] == "timeout"
    assert "--request-timeout" in reply.json()["failure"]["reason"]
    assert fast.status_code == 200 and fast.json()["reward"] == 1.0


def test_batch_scores_every_rollout_in_order_and_reports_each_problem_in_place() -> None:
    rollouts: list[Any] = [
        {"question_id": "geo", "response": CORRECT},
        {"question_id": "geo", "response": WRONG},
        {"question_id": "atlantis", "response": CORRECT},
        {"question_id": "geo"},
        {"question_id": "geo", "response": PARTIAL},
    ]
    with _judge() as judge, geo_service(judge.base_url, max_batch=5) as base:
        reply = _post(base, "/verify/batch", rollouts)
        wrapped = _post(base, "/verify/batch", {"rollouts": rollouts[:2]})
        too_many = _post(base, "/verify/batch", rollouts * 2)
        not_a_list = _post(base, "/verify/batch", {"rollout": []})
    assert reply.status_code == 200, reply.text
    results = reply.json()["results"]
    assert [r["reward"] for r in results] == [1.0, 0.0, None, None, 0.0]
    assert results[0]["question_id"] == "geo" and results[0]["verify_result"] is True
    assert results[2]["error"]["status"] == 404
    assert "atlantis" in results[2]["error"]["message"]
    assert results[3]["error"]["status"] == 422
    assert [r["reward"] for r in wrapped.json()["results"]] == [1.0, 0.0]
    assert too_many.status_code == 413 and "--max-batch" in too_many.json()["message"]
    assert not_a_list.status_code == 422


def test_batch_entries_with_an_unreachable_judge_carry_the_failure() -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with geo_service(dead) as base:
        reply = _post(base, "/verify/batch", [{"question_id": "geo", "response": CORRECT}] * 3)
    assert reply.status_code == 200
    for entry in reply.json()["results"]:
        assert entry["reward"] is None
        assert entry["failure"]["kind"] == "judge_unreachable"
