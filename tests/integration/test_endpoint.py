"""The fault-injecting OpenAI-compatible endpoint (bench/endpoint.py), over real HTTP.

Every test talks to a real server on 127.0.0.1 through httpx or langchain's
ChatOpenAI, the way the pipeline and the benches do.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field, ValidationError

from bench.endpoint import (
    AnswerEntry,
    EndpointConfig,
    RunningEndpoint,
    fill_schema,
    run_endpoint_in_thread,
)

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CAPITAL = "What is the capital of France?"


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class Location(BaseModel):
    city: str
    population: int = Field(ge=1000)


class Answer(BaseModel):
    """A template-like model covering the types a parsing judge is asked for."""

    capital: str
    is_european: bool
    colour: Colour
    rank: int = Field(ge=1, le=10)
    score: float = Field(gt=0.5)
    tags: list[str] = Field(min_length=2)
    where: Location
    note: str | None = None


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    # One client for the module: creating an httpx client loads a CA bundle, which
    # on a busy machine costs more than the calls themselves.
    with httpx.Client(timeout=30, trust_env=False) as client:
        yield client


def chat(
    http: httpx.Client, endpoint: RunningEndpoint, content: str, **extra: Any
) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "user", "content": content}], **extra}
    return http.post(f"{endpoint.base_url}/chat/completions", json=body)


def schema_format(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}


@pytest.fixture
def answers() -> dict[str, AnswerEntry]:
    return {
        CAPITAL: AnswerEntry(
            text="Paris", fields={"capital": "Paris", "rank": 3, "colour": "blue"}
        ),
        "Q-short": AnswerEntry.coerce("short text"),
    }


def test_plain_answers_are_deterministic_and_report_usage(
    http: httpx.Client,
    answers: dict[str, AnswerEntry],
) -> None:
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as endpoint:
        first = chat(http, endpoint, f"Answer briefly. {CAPITAL}").json()
        again = chat(http, endpoint, f"Answer briefly. {CAPITAL}").json()
        other = [chat(http, endpoint, "Something unknown").json() for _ in range(2)]

    assert first["choices"][0]["message"]["content"] == "Paris"
    assert again["choices"][0]["message"]["content"] == "Paris"
    unknown = [reply["choices"][0]["message"]["content"] for reply in other]
    assert unknown[0] == unknown[1]
    assert unknown[0].startswith("Deterministic reply ")
    usage = first["usage"]
    assert usage["prompt_tokens"] >= 1 and usage["completion_tokens"] >= 1
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_reply_tokens_sets_completion_usage(http: httpx.Client) -> None:
    with run_endpoint_in_thread(EndpointConfig(reply_tokens=40)) as endpoint:
        reply = chat(http, endpoint, "anything").json()
    assert reply["usage"]["completion_tokens"] == 40
    assert len(reply["choices"][0]["message"]["content"].split()) == 40


def test_json_schema_reply_validates_and_uses_answer_fields(
    http: httpx.Client,
    answers: dict[str, AnswerEntry],
) -> None:
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as endpoint:
        matched = chat(http, endpoint, f"Parse: {CAPITAL}", response_format=schema_format(Answer))
        unmatched = chat(http, endpoint, "no question here", response_format=schema_format(Answer))

    parsed = Answer.model_validate_json(matched.json()["choices"][0]["message"]["content"])
    assert (parsed.capital, parsed.rank, parsed.colour) == ("Paris", 3, Colour.BLUE)
    # Fields the entry does not name still validate (string fields take the text).
    assert parsed.where.population >= 1000 and len(parsed.tags) >= 2
    assert parsed.where.city == "Paris"
    default = Answer.model_validate_json(unmatched.json()["choices"][0]["message"]["content"])
    assert default.capital == "capital" and default.is_european is False


def test_fill_schema_honours_bounds_unions_and_hints() -> None:
    schema = Answer.model_json_schema()
    hinted = fill_schema(schema, {"rank": 99, "score": "0.9", "note": None, "tags": ["a", "b"]})
    value = Answer.model_validate(hinted)
    assert value.rank == 10  # clamped into [1, 10]
    assert value.score == pytest.approx(0.9)
    assert value.tags == ["a", "b"] and value.note is None
    with pytest.raises(ValidationError):
        # The filler is what makes the reply valid: the raw hint alone is not.
        Answer.model_validate({"rank": 99})
    assert fill_schema({"type": "array", "items": {"type": "integer"}, "maxItems": 0}) == []
    assert fill_schema({"anyOf": [{"type": "null"}, {"type": "boolean"}]}, True) is True
    assert fill_schema({"const": "fixed"}, "other") == "fixed"
    assert fill_schema({"type": "string", "minLength": 5}, "ab") == "abxxx"


def test_chatopenai_plain_and_structured_output(answers: dict[str, AnswerEntry]) -> None:
    with run_endpoint_in_thread(EndpointConfig(answers=answers, model="bench")) as endpoint:
        llm = ChatOpenAI(base_url=endpoint.base_url, api_key="none", model="bench", timeout=30)
        message = llm.invoke(f"Please answer: {CAPITAL}")
        structured = llm.with_structured_output(Answer, method="json_schema")
        parsed = structured.invoke(f"Extract the answer. Question: {CAPITAL}")
        calls = endpoint.stats().calls

    assert message.content == "Paris"
    assert message.usage_metadata is not None and message.usage_metadata["total_tokens"] > 0
    assert isinstance(parsed, Answer) and parsed.capital == "Paris" and parsed.rank == 3
    assert calls == 2


def test_excess_concurrency_gets_429_and_peak_stays_at_cap() -> None:
    config = EndpointConfig(max_concurrency=2, latency_ms=3000, retry_after_s=7)

    async def scenario(endpoint: RunningEndpoint) -> tuple[list[httpx.Response], list[int]]:
        async with httpx.AsyncClient(base_url=endpoint.base_url, timeout=30) as client:

            async def call(text: str) -> httpx.Response:
                body = {"model": "m", "messages": [{"role": "user", "content": text}]}
                return await client.post("/chat/completions", json=body)

            held = [asyncio.create_task(call(f"slow {i}")) for i in range(2)]
            # Wait until both calls occupy the two slots: from then on every call
            # must be refused, whatever the machine's speed.
            while (await client.get(f"{endpoint.url}/stats")).json()["in_flight"] < 2:
                await asyncio.sleep(0.02)
            refused = [await call(f"extra {i}") for i in range(5)]
            return refused, [r.status_code for r in await asyncio.gather(*held)]

    with run_endpoint_in_thread(config) as endpoint:
        refused, held_statuses = asyncio.run(scenario(endpoint))
        stats = endpoint.stats()

    assert [r.status_code for r in refused] == [429] * 5
    assert all(r.headers["retry-after"] == "7" for r in refused)
    assert refused[0].json()["error"]["type"] == "rate_limit_exceeded"
    assert held_statuses == [200, 200]
    assert stats.peak_in_flight == 2 and stats.in_flight == 0
    assert (stats.calls, stats.sent_429) == (7, 5)
    assert stats.by_status == {"200": 2, "429": 5}


def test_fail_first_gives_exactly_n_500s_per_prompt_then_success(http: httpx.Client) -> None:
    with run_endpoint_in_thread(EndpointConfig(fail_first=2)) as endpoint:
        statuses = [chat(http, endpoint, "prompt A").status_code for _ in range(4)]
        other = [chat(http, endpoint, "prompt B").status_code for _ in range(3)]
        stats = endpoint.stats()
        endpoint.reset()
        after_reset = chat(http, endpoint, "prompt A").status_code
        reset_stats = endpoint.stats()

    assert statuses == [500, 500, 200, 200]
    assert other == [500, 500, 200]
    assert (stats.calls, stats.sent_5xx) == (7, 4)
    assert stats.by_status == {"500": 4, "200": 3}
    # A reset forgets the attempts too, so the fault sequence starts over.
    assert after_reset == 500
    assert (reset_stats.calls, reset_stats.sent_5xx, reset_stats.peak_in_flight) == (1, 1, 1)


def test_chatopenai_retries_through_fail_first() -> None:
    with run_endpoint_in_thread(EndpointConfig(fail_first=2, answers={"Q": "A"})) as endpoint:
        llm = ChatOpenAI(base_url=endpoint.base_url, api_key="none", model="m", max_retries=3)
        reply = llm.invoke("Q")
        stats = endpoint.stats()
    assert reply.content == "A"
    assert (stats.calls, stats.sent_5xx) == (3, 2)


def test_fault_rates_are_seeded_per_prompt(http: httpx.Client) -> None:
    def statuses(seed: int) -> list[int]:
        config = EndpointConfig(rate_429=0.3, rate_5xx=0.3, seed=seed)
        with run_endpoint_in_thread(config) as endpoint:
            return [chat(http, endpoint, f"p{i % 5}").status_code for i in range(40)]

    first, second, other_seed = statuses(1), statuses(1), statuses(2)
    assert first == second
    assert first != other_seed
    assert {200, 429, 503} <= set(first)


def test_all_or_nothing_rates_and_retry_after(http: httpx.Client) -> None:
    with run_endpoint_in_thread(EndpointConfig(rate_429=1.0)) as endpoint:
        limited = chat(http, endpoint, "x")
    with run_endpoint_in_thread(EndpointConfig(rate_5xx=1.0)) as endpoint:
        failed = chat(http, endpoint, "x")
        stats = endpoint.stats()
    assert limited.status_code == 429 and limited.headers["retry-after"] == "1"
    assert failed.status_code == 503 and stats.sent_5xx == 1


def test_slow_replies_outlast_a_client_timeout(http: httpx.Client) -> None:
    config = EndpointConfig(timeout_rate=1.0, slow_ms=5000)
    with run_endpoint_in_thread(config) as endpoint:
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
        with pytest.raises(httpx.ReadTimeout):
            http.post(f"{endpoint.base_url}/chat/completions", json=body, timeout=0.3)


@pytest.mark.parametrize("extra_keys", [0, 100], ids=["linear-scan", "prefix-index"])
def test_longest_answer_key_wins(http: httpx.Client, extra_keys: int) -> None:
    answers: dict[str, Any] = {f"unrelated question {i}": f"u{i}" for i in range(extra_keys)}
    answers |= {"item 1": "one", "item 10": "ten"}
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as endpoint:
        ten = chat(http, endpoint, "tell me about item 10 please").json()
        one = chat(http, endpoint, "tell me about item 1 please").json()
        unrelated = chat(http, endpoint, "and unrelated question 7?").json()
    assert ten["choices"][0]["message"]["content"] == "ten"
    assert one["choices"][0]["message"]["content"] == "one"
    expected = "u7" if extra_keys else None
    content = unrelated["choices"][0]["message"]["content"]
    assert content == expected or (expected is None and content.startswith("Deterministic"))


def test_models_health_bad_requests_and_unknown_routes(http: httpx.Client) -> None:
    with run_endpoint_in_thread(EndpointConfig(model="bench-model")) as endpoint:
        models = http.get(f"{endpoint.base_url}/models").json()
        health = http.get(f"{endpoint.url}/health")
        bad = http.post(f"{endpoint.base_url}/chat/completions", content=b"{not json")
        missing = http.get(f"{endpoint.url}/nope")
        streaming = chat(http, endpoint, "x", stream=True)
    assert [m["id"] for m in models["data"]] == ["bench-model"]
    assert health.json() == {"status": "ok"}
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
    assert missing.status_code == 404
    assert streaming.status_code == 400 and "stream" in streaming.json()["error"]["message"]


def test_answer_entries_and_config_validation(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"q1": "text", "q2": {"count": 2}, "q3": {"text": "t"}}))
    loaded = EndpointConfig.load_answers(path)
    assert loaded["q1"] == AnswerEntry(text="text")
    assert loaded["q2"].fields == {"count": 2} and loaded["q2"].plain_text() == "count: 2"
    assert loaded["q3"].text == "t"
    with pytest.raises(ValidationError):
        EndpointConfig(rate_429=1.5)
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="JSON object"):
        EndpointConfig.load_answers(path)


def test_cli_prints_its_port_and_serves(http: httpx.Client, tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({CAPITAL: "Paris"}))
    proc = subprocess.Popen(
        [sys.executable, "bench/endpoint.py", "--port", "0", "--answers", str(answers)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        port = int(line.rsplit("port=", 1)[1])
        body = {"model": "m", "messages": [{"role": "user", "content": CAPITAL}]}
        for _ in range(200):  # the socket is bound before the line is printed
            try:
                reply = http.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body)
                break
            except httpx.ConnectError:
                time.sleep(0.05)
        assert reply.json()["choices"][0]["message"]["content"] == "Paris"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_reset_during_a_call_keeps_in_flight_exact(http: httpx.Client) -> None:
    with run_endpoint_in_thread(EndpointConfig(latency_ms=1500)) as endpoint:
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(chat, http, endpoint, "slow one")
            while endpoint.stats().in_flight < 1:
                time.sleep(0.02)
            endpoint.reset()
            during = endpoint.stats()
            assert pending.result().status_code == 200
        after = endpoint.stats()
    assert (during.calls, during.in_flight, during.peak_in_flight) == (0, 1, 1)
    assert (after.in_flight, after.peak_in_flight) == (0, 1)
