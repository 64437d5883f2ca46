"""Every model call of a result is recorded, prompts and raw replies: against the
scripted OpenAI-compatible endpoint (bench/endpoint.py) over real HTTP, through the
real pipeline and sandbox; and the record is bounded by VERIFLEET_RESULT_MAX_CALLS
(cut with a marker, never failing the result)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from _support.pipeline_fakes import TEMPLATE, make_question

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.pipeline import PipelineResources, verify_question
from verifleet.sandbox import SandboxPool, SandboxSettings
from verifleet.schemas import (
    ModelCall,
    ModelConfig,
    ResultLimits,
    VerificationConfig,
    VerificationResult,
    bound_calls,
    json_size,
)
from verifleet.schemas._results.calls import TRUNCATION_MARK

pytestmark = pytest.mark.integration

QUESTION = "Which gene encodes the anti-apoptotic protein?"
ANSWER = "It is BCL2, the B-cell lymphoma 2 gene."


@pytest.fixture(scope="module")
def endpoint() -> Iterator[RunningEndpoint]:
    answers = {QUESTION: {"text": ANSWER, "fields": {"gene": "BCL2"}}}
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as running:
        yield running


def _model(endpoint: RunningEndpoint, name: str, prompt: str) -> ModelConfig:
    return ModelConfig(
        model_name=name,
        interface="openai_endpoint",
        endpoint_base_url=endpoint.base_url,
        system_prompt=prompt,
    )


def _verify(
    endpoint: RunningEndpoint,
    *,
    judges: int = 1,
    limits: ResultLimits | None = None,
    **config: object,
) -> list[VerificationResult]:
    answering = _model(endpoint, "answerer", "You answer biology questions tersely.")
    judge = _model(endpoint, "judge", "You are the judge: extract the gene.")
    settings = VerificationConfig(answering_models=[answering], parsing_models=[judge], **config)  # type: ignore[arg-type]
    pool = None
    resources = PipelineResources()
    if limits is not None:
        pool = SandboxPool(SandboxSettings(pool_size=1, timeout=10, result_limits=limits))
        resources = PipelineResources(sandbox=pool)
    try:
        return verify_question(
            make_question(TEMPLATE),
            answering,
            [judge] * judges,
            settings,
            replicate=1,
            resources=resources,
        )
    finally:
        if pool is not None:
            pool.close()


def test_the_answer_and_parse_calls_are_recorded_with_prompts_and_raw_replies(
    endpoint: RunningEndpoint,
) -> None:
    results = _verify(endpoint, judges=2)
    assert endpoint.stats().calls >= 3
    for result in results:
        assert result.metadata.completed_without_errors, result.metadata.error
        assert result.template is not None
        calls = result.template.model_calls
        # The answer is generated once, but each judge's result shows its call.
        assert [c.stage for c in calls] == ["answer_generation", "parsing"]
        answer, parse = calls
        assert answer.model == "answerer" and answer.kind == "text"
        assert answer.messages[0] == {
            "role": "system",
            "content": "You answer biology questions tersely.",
        }
        assert any(QUESTION in m["content"] for m in answer.messages if m["role"] == "user")
        assert answer.reply == ANSWER == result.template.raw_llm_response
        assert parse.model == "judge" and parse.kind == "json"
        assert parse.messages[0]["role"] == "system"
        assert "You are the judge: extract the gene." in parse.messages[0]["content"]
        # The judge was shown the answer, and its reply is what was parsed.
        assert any(ANSWER in m["content"] for m in parse.messages)
        assert json.loads(parse.reply or "") == {"gene": "BCL2"}
        assert parse.error is None and not parse.truncated


def test_record_model_calls_off_records_nothing(endpoint: RunningEndpoint) -> None:
    [result] = _verify(endpoint, record_model_calls=False)
    assert result.metadata.completed_without_errors, result.metadata.error
    assert result.template is not None and result.template.model_calls == []
    assert result.template.verify_result is True


def test_the_calls_limit_cuts_texts_with_a_marker_and_keeps_the_verdict(
    endpoint: RunningEndpoint,
) -> None:
    [result] = _verify(endpoint, limits=ResultLimits(calls=1200))
    assert result.metadata.completed_without_errors, result.metadata.error
    assert result.template is not None and result.template.verify_result is True
    calls = result.template.model_calls
    assert json_size([c.model_dump() for c in calls]) <= 1200
    assert any(c.truncated for c in calls)
    texts = [m["content"] for c in calls for m in c.messages]
    assert any(TRUNCATION_MARK in t for t in texts)


def _call(stage: str, size: int) -> ModelCall:
    return ModelCall(
        stage=stage,
        model="m",
        messages=[
            {"role": "system", "content": "s" * size},
            {"role": "user", "content": "u" * size},
        ],
        reply="r" * size,
    )


def test_bound_calls_keeps_small_records_unchanged() -> None:
    calls = [_call("parsing", 100)]
    assert bound_calls(calls, ResultLimits()) is calls


def test_bound_calls_cuts_each_long_text_and_says_how_much_was_kept() -> None:
    calls = [_call("answer_generation", 50_000), _call("parsing", 300)]
    bounded = bound_calls(calls, ResultLimits(calls=20_000))
    assert json_size([c.model_dump() for c in bounded]) <= 20_000
    first = bounded[0]
    assert first.truncated and first.reply is not None
    assert first.reply.startswith("r" * 100)
    assert f"of {50_000} characters kept]" in first.reply
    assert bounded[1].messages == calls[1].messages and not bounded[1].truncated


def test_bound_calls_drops_the_last_calls_when_even_short_texts_do_not_fit() -> None:
    calls = [_call(f"rubric_evaluation_{i}", 5_000) for i in range(40)]
    bounded = bound_calls(calls, ResultLimits(calls=8_000))
    assert json_size([c.model_dump() for c in bounded]) <= 8_000
    note = bounded[-1]
    assert note.stage == "omitted" and note.truncated
    assert note.error is not None
    assert f"{40 - (len(bounded) - 1)} more model calls not recorded" in note.error
    assert "VERIFLEET_RESULT_MAX_CALLS" in note.error


def test_old_results_without_calls_still_read() -> None:
    [result] = [VerificationResult.model_validate(_old_result())]
    assert result.template is not None and result.template.model_calls == []


def _old_result() -> dict[str, object]:
    return {
        "metadata": {
            "question_id": "q1",
            "template_id": "no_template",
            "question_text": "?",
            "answering": {"interface": "langchain", "model_name": "a"},
            "parsing": {"interface": "langchain", "model_name": "p"},
            "completed_without_errors": True,
            "execution_time": 1.0,
            "timestamp": "2026-01-01T00:00:00",
        },
        "template": {"raw_llm_response": "x"},
    }
