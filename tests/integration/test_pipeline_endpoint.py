"""The real langchain caller and ``run_unit`` over HTTP against the fault-injecting
OpenAI-compatible endpoint (bench/endpoint.py): 5xx and 429 with Retry-After come
from a real server, through openai's real exceptions. Only the backoff sleep is
recorded instead of slept, to keep the suite fast."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _support.pipeline_fakes import TEMPLATE, make_question

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.pipeline import (
    ChatModelCache,
    LangchainChatCaller,
    ModelCallError,
    PipelineResources,
    UsageTracker,
    verify_question,
)
from verifleet.schemas import ModelConfig, RetryPolicy, VerificationConfig

pytestmark = pytest.mark.integration

QUESTION = "Which gene encodes the anti-apoptotic protein?"


def _endpoint(**config: object) -> RunningEndpoint:
    answers = {QUESTION: {"text": "It is BCL2.", "fields": {"gene": "BCL2"}}}
    return run_endpoint_in_thread(EndpointConfig(answers=answers, **config))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def healthy() -> Iterator[RunningEndpoint]:
    with _endpoint() as endpoint:
        yield endpoint


def _model(endpoint: RunningEndpoint, name: str = "fake-model") -> ModelConfig:
    return ModelConfig(
        model_name=name, interface="openai_endpoint", endpoint_base_url=endpoint.base_url
    )


def _caller(endpoint: RunningEndpoint, sleeps: list[float], **policy: float) -> LangchainChatCaller:
    return LangchainChatCaller(
        _model(endpoint),
        tracker=UsageTracker(),
        clients=ChatModelCache(),
        policy=RetryPolicy(jitter=0.0, **policy),  # type: ignore[arg-type]
        request_timeout=10.0,
        sleep=sleeps.append,
    )


def test_5xx_are_retried_with_exponential_backoff() -> None:
    sleeps: list[float] = []
    with _endpoint(fail_first=2) as endpoint:
        reply = _caller(endpoint, sleeps).invoke(
            [{"role": "user", "content": QUESTION}], stage="answer_generation"
        )
        assert endpoint.stats().calls == 3
    assert reply == "It is BCL2."
    assert sleeps == [1.0, 2.0]


def test_429_honours_retry_after_then_gives_up() -> None:
    sleeps: list[float] = []
    with _endpoint(rate_429=1.0, retry_after_s=7) as endpoint:
        with pytest.raises(ModelCallError) as caught:
            _caller(endpoint, sleeps, max_attempts=3).invoke(
                [{"role": "user", "content": QUESTION}], stage="answer_generation"
            )
        assert endpoint.stats().sent_429 == 3
    assert str(caught.value) == "429 Too Many Requests after 3 attempts"
    assert sleeps == [7.0, 7.0]


def test_structured_output_uses_json_schema_and_counts_tokens(healthy: RunningEndpoint) -> None:
    tracker = UsageTracker()
    caller = LangchainChatCaller(
        _model(healthy),
        tracker=tracker,
        clients=ChatModelCache(),
        policy=RetryPolicy(),
        request_timeout=10.0,
    )
    schema = {"type": "object", "properties": {"gene": {"type": "string"}}, "required": ["gene"]}
    value = caller.invoke_json(
        [{"role": "user", "content": QUESTION}],
        stage="parsing",
        schema=schema,
        schema_name="Answer",
    )
    assert value == {"gene": "BCL2"}
    usage = tracker.stage("parsing")
    assert usage is not None and usage["total_tokens"] > 0 and usage["model"] == "fake-model"


def test_run_unit_end_to_end_over_http(healthy: RunningEndpoint) -> None:
    answering, judge = _model(healthy, "answerer"), _model(healthy, "judge")
    config = VerificationConfig(answering_models=[answering], parsing_models=[judge])
    resources = PipelineResources()
    healthy.reset()
    results = verify_question(
        make_question(TEMPLATE),
        config.answering_models[0],
        [config.parsing_models[0], config.parsing_models[0]],
        config,
        replicate=1,
        resources=resources,
    )
    assert healthy.stats().calls == 3  # one answer, two parses
    assert len(resources.clients) == 2  # a client per model config, reused
    for result in results:
        assert result.metadata.completed_without_errors, result.metadata.error
        assert result.template is not None and result.template.verify_result is True
        usage = result.template.usage_metadata
        assert usage is not None and set(usage) == {"answer_generation", "parsing", "total"}


def test_unit_deadline_stops_model_calls(healthy: RunningEndpoint) -> None:
    import time

    answering = _model(healthy, "answerer")
    config = VerificationConfig(answering_models=[answering], parsing_models=[answering])
    [result] = verify_question(
        make_question(TEMPLATE),
        config.answering_models[0],
        config.parsing_models,
        config,
        replicate=None,
        resources=PipelineResources(),
        deadline=time.monotonic() - 1.0,
    )
    assert result.metadata.error is not None
    assert result.metadata.error.startswith("answer generation failed: unit deadline exceeded")
