"""The reward service over real HTTP: uvicorn on a free port, httpx requests, the
bench endpoint (a real OpenAI-compatible server) as the judge."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import redis
import uvicorn
from _support.fleet import VERIFLEET
from _support.redis_server import free_port
from _support.reward import (
    CORRECT,
    JUDGE_ANSWERS,
    PARTIAL,
    QUESTION,
    VERBOSE_CORRECT,
    WRONG,
    geo_benchmark,
    nemo_request,
)

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.pipeline import CallCache, call_cache_failures
from verifleet.reward import RewardConfig, reward_resources
from verifleet.reward.serve import create_app
from verifleet.schemas import ModelConfig, dump_benchmark
from verifleet.store import RedisCallCache

HYBRID = RewardConfig.build(
    {
        "mode": "hybrid",
        "components": [
            {"name": "correctness", "source": "verify_granular_result", "weight": 0.5},
            {"name": "pedagogy", "source": "trait", "trait": "clarity", "weight": 0.3},
            {"name": "efficiency", "source": "trait", "trait": "concise", "weight": 0.2},
        ],
    }
)


@pytest.fixture(scope="module")
def judge() -> Iterator[RunningEndpoint]:
    with run_endpoint_in_thread(EndpointConfig(answers=JUDGE_ANSWERS)) as endpoint:
        yield endpoint


@contextmanager
def serving(
    endpoint: RunningEndpoint,
    reward: RewardConfig,
    *,
    cache: CallCache | None = None,
    max_body_bytes: int = 1_000_000,
) -> Iterator[httpx.Client]:
    """The service for the geo benchmark on a free port, and a client for it."""
    app = create_app(
        geo_benchmark(),
        [ModelConfig.parse(f"{endpoint.base_url}#judge")],
        reward,
        resources=reward_resources(cache),
        max_body_bytes=max_body_bytes,
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
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}", timeout=60, trust_env=False
        ) as client:
            yield client
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def binary(judge: RunningEndpoint) -> Iterator[httpx.Client]:
    with serving(judge, RewardConfig(), max_body_bytes=20_000) as client:
        yield client


def test_correct_and_incorrect_responses_get_one_and_zero(binary: httpx.Client) -> None:
    right = binary.post("/verify", json=nemo_request(CORRECT, rollout_id=7))
    assert right.status_code == 200, right.text
    body = right.json()
    assert body["reward"] == 1.0
    # The request comes back with its own fields, plus the full result.
    assert body["rollout_id"] == 7
    assert body["responses_create_params"]["input"][0]["content"] == QUESTION
    result = body["verification_result"]
    assert result["template"]["verify_result"] is True
    assert result["template"]["parsed_llm_response"] == {"city": "Paris", "country": "France"}
    assert result["metadata"]["question_id"] == "geo"
    wrong = binary.post("/verify", json={"question_id": "geo", "response": WRONG})
    assert wrong.status_code == 200, wrong.text
    assert wrong.json()["reward"] == 0.0
    assert wrong.json()["verification_result"]["template"]["verify_result"] is False


def test_same_response_gets_the_same_reward_without_asking_the_judge_again(
    binary: httpx.Client, judge: RunningEndpoint
) -> None:
    first = binary.post("/verify", json={"question_id": "geo", "response": VERBOSE_CORRECT})
    calls = judge.stats().calls
    again = binary.post("/verify", json={"question_id": "geo", "response": VERBOSE_CORRECT})
    assert first.json()["reward"] == again.json()["reward"] == 1.0
    assert judge.stats().calls == calls


def test_malformed_requests_get_4xx_with_a_message(binary: httpx.Client) -> None:
    cases = [
        (b"{not json", 400, "not valid JSON"),
        (b'{"question_id": "nope", "response": "x"}', 404, "unknown question id 'nope'"),
        (b'{"response": "x"}', 422, "exactly one of 'question_id' and 'question'"),
        (b'{"question_id": "geo", "response": "   "}', 422, "empty"),
        (
            b'{"responses_create_params": {"input": "Who?"}, "response": {"output": []},'
            b' "question_id": "geo"}',
            422,
            "no assistant message",
        ),
        (b"[1, 2]", 422, "malformed request"),
    ]
    for raw, status, message in cases:
        reply = binary.post("/verify", content=raw, headers={"content-type": "application/json"})
        assert reply.status_code == status, (raw, reply.text)
        assert message in reply.json()["message"], reply.text
    unmatched = binary.post("/verify", json=nemo_request(CORRECT, question="Something else?"))
    assert unmatched.status_code == 404
    assert "matches no question" in unmatched.json()["message"]
    big = binary.post("/verify", json={"question_id": "geo", "response": "x" * 30_000})
    assert big.status_code == 413
    assert "larger than 20000 bytes" in big.json()["message"]

    def chunked() -> Iterator[bytes]:
        yield b'{"question_id": "geo", "response": "'
        for _ in range(30):
            yield b"x" * 1000
        yield b'"}'

    # No Content-Length: the limit is enforced while the body streams in.
    streamed = binary.post(
        "/verify", content=chunked(), headers={"content-type": "application/json"}
    )
    assert streamed.status_code == 413


def test_inline_question_with_a_broken_template_is_a_bad_request(binary: httpx.Client) -> None:
    reply = binary.post(
        "/verify",
        json={
            "question": {"text": "2+2?", "answer_template": "class Answer(:\n"},
            "response": "4",
        },
    )
    assert reply.status_code == 422
    assert reply.json()["message"].startswith("question.answer_template:")


def test_health_and_openapi(binary: httpx.Client) -> None:
    health = binary.get("/health").json()
    assert (health["status"], health["benchmark"], health["reward_mode"]) == ("ok", "geo", "binary")
    spec = binary.get("/openapi.json").json()
    assert "/verify" in spec["paths"]
    assert "VerifyResponse" in spec["components"]["schemas"]


def test_partial_answer_gets_granular_and_hybrid_rewards(judge: RunningEndpoint) -> None:
    with serving(judge, RewardConfig(mode="continuous")) as client:
        body = client.post("/verify", json={"question_id": "geo", "response": PARTIAL}).json()
        assert body["reward"] == 0.5
        assert body["verification_result"]["template"]["verify_result"] is False
    with serving(judge, HYBRID) as client:
        body = client.post("/verify", json={"question_id": "geo", "response": PARTIAL}).json()
        # granular 0.5, clarity 4 of 1-5 -> 0.75, concise (33 chars) -> 1.0
        assert body["reward"] == pytest.approx(0.5 * 0.5 + 0.3 * 0.75 + 0.2 * 1.0)
        assert body["reward_breakdown"][0]["components"] == {
            "correctness": 0.5,
            "pedagogy": 0.75,
            "efficiency": 1.0,
        }
        long = client.post("/verify", json={"question_id": "geo", "response": VERBOSE_CORRECT})
        assert long.json()["reward"] == pytest.approx(0.5 + 0.3 * 0.5 + 0.0)


def test_cli_serve_answers_verify_with_its_bearer_token(
    judge: RunningEndpoint, tmp_path: Path
) -> None:
    bench = tmp_path / "geo.yaml"
    dump_benchmark(geo_benchmark(), bench)
    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    token = "cli-t0ken"
    proc = subprocess.Popen(
        [
            *VERIFLEET,
            "serve",
            str(bench),
            "--parsing",
            f"{judge.base_url}#judge",
            "--port",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "VERIFLEET_SERVE_TOKEN": token},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", trust_env=False).status_code == 200:
                    break
            except httpx.ConnectError:
                assert time.monotonic() < deadline, "verifleet serve did not start"
                time.sleep(0.2)
        url = f"http://127.0.0.1:{port}/verify"
        anonymous = httpx.post(url, json=nemo_request(WRONG), timeout=60, trust_env=False)
        assert anonymous.status_code == 401
        reply = httpx.post(
            url,
            json=nemo_request(WRONG),
            headers={"authorization": f"Bearer {token}"},
            timeout=60,
            trust_env=False,
        )
        assert reply.status_code == 200, reply.text
        assert reply.json()["reward"] == 0.0
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()
    assert "bearer token required" in (tmp_path / "serve.log").read_text()


def test_replicas_sharing_redis_reuse_each_others_judge_replies(
    judge: RunningEndpoint, redis_url: str
) -> None:
    client = redis.Redis.from_url(redis_url)
    body = {"question_id": "geo", "response": PARTIAL}
    with serving(judge, HYBRID, cache=RedisCallCache(client)) as first:
        rewarded = first.post("/verify", json=body).json()["reward"]
    calls = judge.stats().calls
    # A second replica asks Redis, not the judge.
    with serving(judge, HYBRID, cache=RedisCallCache(client)) as second:
        assert second.post("/verify", json=body).json()["reward"] == rewarded
    assert judge.stats().calls == calls
    # The fleet's one call cache: what `verifleet cache stats --redis` counts.
    assert len(list(client.scan_iter(match="vf:cc:*"))) >= 2


def test_first_stored_reply_wins_across_caches(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    one, two = RedisCallCache(client), RedisCallCache(client)
    assert one.put("k", b"first") == b"first"
    # Another process that computed a different reply adopts the stored one.
    assert two.put("k", b"second") == b"first"
    assert two.get("k") == b"first"
    assert one.get("missing") is None


def test_with_redis_down_a_request_is_answered_and_the_failure_counted(
    judge: RunningEndpoint,
) -> None:
    """The judge cache's Redis refuses connections (a closed port: a real
    refusal, nothing injected): the request still gets its reward, the judge is
    asked, and the failures are counted in /health."""
    down = RedisCallCache(redis.Redis(host="127.0.0.1", port=free_port()))
    before = call_cache_failures()
    with serving(judge, RewardConfig(), cache=down) as client:
        calls = judge.stats().calls
        reply = client.post("/verify", json={"question_id": "geo", "response": CORRECT})
        assert reply.status_code == 200, reply.text
        assert reply.json()["reward"] == 1.0
        assert judge.stats().calls == calls + 1
        # One failed lookup and one failed write of the judge's reply.
        assert call_cache_failures() == before + 2
        assert client.get("/health").json()["call_cache_failures"] == before + 2


def test_swap_check_through_the_service() -> None:
    reference = "Paris, France"
    order = {
        # Position-biased judge: equivalent only when the reference comes first.
        f"ANSWER 1:\n{reference}\n\nANSWER 2:\n{CORRECT}": {"fields": {"equivalent": True}},
        f"ANSWER 1:\n{CORRECT}\n\nANSWER 2:\n{reference}": {"fields": {"equivalent": False}},
    }
    answers = {**JUDGE_ANSWERS, **order}
    components = [
        {"name": "match", "source": "equivalence", "weight": 0.5},
        {"name": "correctness", "source": "verify_result", "weight": 0.5},
    ]
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as biased:
        for swap, reward in ((False, 1.0), (True, 0.5)):
            config = RewardConfig.build(
                {"mode": "hybrid", "components": components, "swap_check": swap}
            )
            with serving(biased, config) as client:
                body = client.post(
                    "/verify", json={"question_id": "geo", "response": CORRECT}
                ).json()
            assert body["reward"] == reward, body
            assert body["equivalence"]["consistent"] is (not swap)


def test_serve_contains_a_broken_template_to_its_question_unless_strict(
    judge: RunningEndpoint, tmp_path: Path
) -> None:
    import contextlib

    from verifleet.orchestrator.cli import build_parser
    from verifleet.orchestrator.cli._reward_args import reward_setup
    from verifleet.reward import PlainVerifyRequest
    from verifleet.schemas import BenchmarkLoadError

    bench = geo_benchmark()
    broken = bench.questions[0].model_copy(
        update={"id": "broken", "text": "Broken?", "answer_template": "class Answer(:\n    pass\n"}
    )
    path = tmp_path / "b.yaml"
    dump_benchmark(bench.model_copy(update={"questions": [*bench.questions, broken]}), path)
    argv = ["serve", str(path), "--parsing", f"{judge.base_url}#judge"]
    with contextlib.ExitStack() as stack:
        scorer = reward_setup(build_parser().parse_args(argv), stack, redis_url=None)
        good = scorer.score(
            PlainVerifyRequest.model_validate({"question_id": "geo", "response": CORRECT})
        )
        failed = scorer.score(
            PlainVerifyRequest.model_validate({"question_id": "broken", "response": CORRECT})
        )
    assert good.reward == 1.0
    assert failed.reward == 0.0
    [result] = failed.results
    assert result.template is not None and result.template.template_validation_error
    with (
        contextlib.ExitStack() as stack,
        pytest.raises(BenchmarkLoadError, match="question broken"),
    ):
        reward_setup(build_parser().parse_args([*argv, "--strict"]), stack, redis_url=None)
