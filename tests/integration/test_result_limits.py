"""What one result may hold: the operator's limits on ground truth, parsed values,
verification output, judge schema and model response, enforced where the data
enters the host (real executors, strict mode), each failing only its question
with an error naming the limit."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.pipeline import PipelineResources
from verifleet.sandbox import SandboxPool, SandboxSettings
from verifleet.sandbox._bounds import MAX_ERROR_CHARS
from verifleet.schemas import (
    Benchmark,
    ConfigError,
    ModelConfig,
    Question,
    ResultLimits,
    TemplateValidationError,
    VerificationConfig,
)

pytestmark = pytest.mark.integration

LIMITS = ResultLimits(
    ground_truth=1024, parsed=1024, verify_output=1024, judge_schema=4096, response=2048
)


def _template(*, truth: str = '"safe"', post: str = "", verify: str = "return False") -> str:
    return f"""
from verifleet.templates import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {{"value": {truth}}}
{post}

    def verify(self) -> bool:
        {verify}
"""


HONEST = _template(truth='"Paris"', verify='return self.value == "Paris"')


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    sandbox = SandboxPool(SandboxSettings(pool_size=1, timeout=5, result_limits=LIMITS))
    yield sandbox
    sandbox.close()


def test_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ResultLimits.from_env() == ResultLimits()
    monkeypatch.setenv("VERIFLEET_RESULT_MAX_GROUND_TRUTH", "2048")
    monkeypatch.setenv("VERIFLEET_RESULT_MAX_RESPONSE", " 4096 ")
    limits = SandboxSettings.from_env().result_limits
    assert (limits.ground_truth, limits.response, limits.parsed) == (2048, 4096, 65536)
    monkeypatch.setenv("VERIFLEET_RESULT_MAX_PARSED", "lots")
    with pytest.raises(ConfigError, match="VERIFLEET_RESULT_MAX_PARSED='lots' is not a whole"):
        ResultLimits.from_env()
    monkeypatch.setenv("VERIFLEET_RESULT_MAX_PARSED", "0")
    with pytest.raises(ConfigError, match="must be positive"):
        ResultLimits.from_env()


def test_a_huge_ground_truth_refuses_the_template(pool: SandboxPool) -> None:
    with pytest.raises(TemplateValidationError) as caught:
        pool.load_template(_template(truth='"x" * 5000'), "q_gt")
    message = str(caught.value)
    assert "ground truth is 5012 bytes as JSON, over the limit of 1024" in message
    assert "VERIFLEET_RESULT_MAX_GROUND_TRUTH" in message
    # Refused once, remembered: the next question of the template asks no executor.
    described = pool.stats().described
    with pytest.raises(TemplateValidationError, match="VERIFLEET_RESULT_MAX_GROUND_TRUTH"):
        pool.load_template(_template(truth='"x" * 5000'), "q_gt2")
    assert pool.stats().described == described
    # The honest template next to it is untouched.
    handle = pool.load_template(HONEST, "q_ok")
    evaluation = pool.evaluate(handle, {"value": "Paris"}, "Paris")
    assert evaluation.verification is not None and evaluation.verification.verify_result


def test_a_huge_judge_schema_refuses_the_template(pool: SandboxPool) -> None:
    source = _template().replace("value: str", 'value: str = Field(description="d" * 8000)')
    source = "from pydantic import Field\n" + source
    with pytest.raises(TemplateValidationError, match="VERIFLEET_RESULT_MAX_JUDGE_SCHEMA"):
        pool.load_template(source, "q_schema")


def test_huge_parsed_values_fail_the_evaluation(pool: SandboxPool) -> None:
    handle = pool.load_template(HONEST, "q_parsed")
    with pytest.raises(TemplateValidationError, match="VERIFLEET_RESULT_MAX_PARSED") as caught:
        pool.evaluate(handle, {"value": "P" * 5000}, "")
    assert "the judge's values as parsed by the template is 5012 bytes" in str(caught.value)
    # Written by the template itself, whatever the judge said.
    inflated = _template(post='        self.value = "z" * 5000')
    handle = pool.load_template(inflated, "q_inflated")
    with pytest.raises(TemplateValidationError, match="VERIFLEET_RESULT_MAX_PARSED"):
        pool.evaluate(handle, {"value": "a"}, "")


def test_a_huge_verification_output_fails_the_evaluation(pool: SandboxPool) -> None:
    loud = _template(verify='raise ValueError("y" * 5000)')
    handle = pool.load_template(loud, "q_verify")
    with pytest.raises(TemplateValidationError, match="VERIFLEET_RESULT_MAX_VERIFY_OUTPUT"):
        pool.evaluate(handle, {"value": "a"}, "")
    many = _template(post="").replace(
        "    def verify(self)",
        "    def field_results(self):\n"
        '        return {"f" * 100 + str(i): False for i in range(100)}\n\n'
        "    def verify(self)",
    )
    handle = pool.load_template(many, "q_fields")
    with pytest.raises(TemplateValidationError, match="template's verification output"):
        pool.evaluate(handle, {"value": "a"}, "")


def test_error_texts_from_an_executor_are_cut(pool: SandboxPool) -> None:
    # A template whose ground-truth code raises a 100 000-character message.
    source = _template(truth='"ok"', post='        raise ValueError("q" * 100000)')
    with pytest.raises(TemplateValidationError) as caught:
        pool.load_template(source, "q_err")
    message = str(caught.value)
    assert len(message) < MAX_ERROR_CHARS + 200
    assert "more characters cut)" in message


def test_a_huge_model_response_fails_its_question_only() -> None:
    questions = [
        Question(id="long", text="Say a lot?", answer_template=HONEST),
        Question(id="short", text="Capital of France?", answer_template=HONEST),
    ]
    answers = {
        "Say a lot?": {"text": "Paris " * 1000, "fields": {"value": "Paris"}},
        "Capital of France?": {"text": "Paris", "fields": {"value": "Paris"}},
    }
    sandbox = SandboxPool(SandboxSettings(pool_size=1, timeout=5, result_limits=LIMITS))
    try:
        with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
            config = VerificationConfig.build(
                answering_models=[ModelConfig.parse(f"{ep.base_url}#answerer")],
                parsing_models=[ModelConfig.parse(f"{ep.base_url}#judge")],
            )
            runner = LocalRunner(
                Benchmark(name="limits", questions=questions),
                config,
                resources=PipelineResources(sandbox=sandbox),
            )
            results = {r.metadata.question_id: r for _u, rs in runner.run() for r in rs}
    finally:
        sandbox.close()
    long = results["long"]
    assert long.metadata.error is not None
    assert "the answering model's response is" in long.metadata.error
    assert "VERIFLEET_RESULT_MAX_RESPONSE" in long.metadata.error
    assert "Paris Paris" not in long.model_dump_json()
    # The answering call stays on record without the reply over the limit.
    assert long.template is not None
    [call] = long.template.model_calls
    assert call.stage == "answer_generation" and call.reply is None
    assert call.error is not None and "VERIFLEET_RESULT_MAX_RESPONSE" in call.error
    short = results["short"]
    assert short.metadata.error is None
    assert short.template is not None and short.template.verify_result is True
