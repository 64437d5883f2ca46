"""``run_unit``: one answer per unit, result sections per mode, error results."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from _support.pipeline_fakes import (
    JUDGE,
    JUDGE_2,
    TEMPLATE,
    ScriptedModels,
    make_config,
    make_question,
    make_resources,
)

from verifleet.pipeline import (
    CachedAnswer,
    ManualAnswerError,
    ManualAnswerStore,
    ModelCallError,
    StructuredOutputError,
    verify_question,
)
from verifleet.schemas import (
    FewShotConfig,
    ModelConfig,
    RegexTrait,
    Rubric,
    VerificationResult,
    VerificationResultMetadata,
    compute_template_id,
)

pytestmark = pytest.mark.integration

RUBRIC = Rubric(regex_traits=[RegexTrait(name="names_gene", pattern="BCL2")])


def _script(answer: Any = "It is BCL2.", **judges: list[Any]) -> ScriptedModels:
    replies: dict[str, dict[str, list[Any]]] = {"answerer": {"answer_generation": [answer]}}
    for name, parsing in judges.items():
        replies[name.replace("_", "-")] = {"parsing": parsing}
    return ScriptedModels(replies)


def _run(
    script: ScriptedModels, parsing: list[ModelConfig] | None = None, **kw: Any
) -> list[VerificationResult]:
    config = kw.pop("config", None) or make_config(parsing_models=parsing or [JUDGE])
    return verify_question(
        kw.pop("question", None) or make_question(),
        kw.pop("answering", config.answering_models[0]),
        parsing or [JUDGE],
        config,
        replicate=kw.pop("replicate", 1),
        resources=make_resources(script),
        **kw,
    )


def test_one_answer_serves_every_parsing_model() -> None:
    script = _script(judge=[{"gene": "BCL2"}], judge_2=[{"gene": "TP53"}])
    results = _run(script, [JUDGE, JUDGE_2])
    assert script.stages_called("answerer") == ["answer_generation"]
    assert [r.metadata.parsing.model_name for r in results] == ["judge", "judge-2"]
    assert [r.template.verify_result for r in results if r.template] == [True, False]
    for result in results:
        usage = result.template.usage_metadata if result.template else None
        assert usage is not None and usage["answer_generation"]["model"] == "answerer"
        assert usage["total"] == {"input_tokens": 20, "output_tokens": 10, "total_tokens": 30}


def test_metadata_identity_and_ids() -> None:
    [result] = _run(_script(judge=[{"gene": "BCL2"}]), replicate=3)
    meta = result.metadata
    assert meta.template_id == compute_template_id(TEMPLATE)
    assert meta.replicate == 3 and meta.raw_answer == "BCL2"
    assert meta.evaluation_mode == "template_only"
    assert meta.result_id == VerificationResultMetadata.compute_result_id(
        "q1", meta.answering, meta.parsing, meta.timestamp, 3
    )
    assert meta.answering.display_string == "openai_endpoint:answerer"
    assert result.template is not None and result.template.parsed_gt_response == {"gene": "BCL2"}


def test_answer_generation_failure_is_recorded_once_for_all_judges() -> None:
    error = ModelCallError("429 Too Many Requests after 4 attempts", transient=True, attempts=4)
    script = _script(answer=error, judge=[{"gene": "BCL2"}], judge_2=[{"gene": "BCL2"}])
    results = _run(script, [JUDGE, JUDGE_2])
    assert script.stages_called() == ["answer_generation"]
    for result in results:
        assert result.metadata.completed_without_errors is False
        assert (
            result.metadata.error
            == "answer generation failed: 429 Too Many Requests after 4 attempts"
        )
        assert result.template is not None and result.template.verify_result is None


def test_invalid_template_fails_before_any_model_call() -> None:
    script = _script(judge=[{"gene": "BCL2"}])
    [result] = _run(script, question=make_question("class Answer(BaseAnswer):\n    x: int = \n"))
    assert script.calls == []
    assert result.metadata.completed_without_errors is False
    assert result.metadata.error is not None
    assert result.metadata.error.startswith("template validation failed: question q1: ")
    assert result.template is not None and result.template.raw_llm_response == ""


def test_unparsable_judge_reply_fails_only_that_judge() -> None:
    bad = StructuredOutputError(
        "judge returned invalid JSON after 2 replies and repair: x", raw="?"
    )
    results = _run(_script(judge=[bad], judge_2=[{"gene": "BCL2"}]), [JUDGE, JUDGE_2])
    assert results[0].metadata.error == (
        "parsing failed: judge returned invalid JSON after 2 replies and repair: x"
    )
    assert results[0].template is not None and results[0].template.raw_llm_response == "It is BCL2."
    assert results[1].metadata.completed_without_errors is True


def test_judge_output_not_fitting_the_template_is_a_parsing_error() -> None:
    [result] = _run(_script(judge=[{"gene": ["not", "text"]}]))
    assert result.metadata.error is not None
    assert result.metadata.error.startswith(
        "parsing failed: judge output does not fit the template"
    )


def test_verify_exception_is_recorded_not_fatal() -> None:
    template = TEMPLATE.replace(
        'return self.gene.strip().upper() == self.correct["gene"]', 'raise KeyError("missing")'
    )
    [result] = _run(_script(judge=[{"gene": "BCL2"}]), question=make_question(template))
    assert result.metadata.completed_without_errors is True
    assert result.template is not None
    assert result.template.verify_result is False
    assert result.template.field_verification_error == "KeyError: 'missing'"
    assert result.template.verify_granular_result is None


def test_cached_answer_skips_generation_and_keeps_its_usage() -> None:
    script = _script(judge=[{"gene": "BCL2"}])
    usage = {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7, "model": "answerer"}
    [result] = _run(script, cached_answer=CachedAnswer(raw_llm_response="BCL2", usage=usage))
    assert script.stages_called("answerer") == []
    assert result.template is not None
    assert result.template.usage_metadata is not None
    assert result.template.usage_metadata["answer_generation"] == usage


@pytest.mark.parametrize(
    ("mode", "sections"),
    [
        ("template_only", {"template"}),
        ("template_and_rubric", {"template", "rubric"}),
        ("rubric_only", {"rubric"}),
    ],
)
def test_sections_per_evaluation_mode(mode: str, sections: set[str]) -> None:
    script = _script(judge=[{"gene": "BCL2"}])
    [result] = _run(script, config=make_config(evaluation_mode=mode), rubric=RUBRIC)
    present = {
        name
        for name in ("template", "rubric", "deep_judgment", "deep_judgment_rubric")
        if getattr(result, name) is not None
    }
    assert present == sections
    if mode == "rubric_only":
        assert result.metadata.template_id == "no_template"
        assert script.stages_called("judge") == []  # regex trait: no judge call
        assert result.evaluation_input == "It is BCL2."


def test_deep_judgment_section_present_when_enabled_in_template_modes() -> None:
    script = ScriptedModels({"answerer": {"answer_generation": ["I am not sure."]}})
    # Deep judgment's first call fails: the section still says it was enabled.
    script.replies["judge"] = {
        "deep_judgment": [ModelCallError("400 Bad Request", transient=False, attempts=1)]
    }
    [result] = _run(script, config=make_config(deep_judgment_enabled=True))
    assert result.deep_judgment is not None
    assert result.deep_judgment.deep_judgment_enabled is True
    assert result.deep_judgment.deep_judgment_performed is False
    assert result.metadata.error == "parsing failed: 400 Bad Request"


def test_few_shot_examples_reach_the_answering_prompt() -> None:
    script = _script(judge=[{"gene": "BCL2"}])
    question = make_question(few_shot_examples=[{"question": "Gene for p53?", "answer": "TP53"}])
    config = make_config(few_shot_config=FewShotConfig(global_mode="all"))
    [result] = _run(script, question=question, config=config)
    messages = script.calls[0].messages
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == "TP53"
    assert result.metadata.few_shot_enabled is True
    assert result.metadata.few_shot_example_count == 1


# --- manual answers -------------------------------------------------------------------


def _manual(path: Path) -> ModelConfig:
    return ModelConfig(model_name="recorded", interface="manual", manual_traces_path=str(path))


def test_manual_json_answers_replay_without_a_model(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"q1": "It is BCL2."}))
    script = ScriptedModels({"judge": {"parsing": [{"gene": "BCL2"}]}})
    [result] = _run(script, answering=_manual(path))
    assert result.template is not None and result.template.raw_llm_response == "It is BCL2."
    assert result.template.verify_result is True
    assert result.metadata.answering.interface == "manual"


def test_manual_jsonl_traces(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    trace = [{"type": "human", "content": "q"}, {"type": "ai", "content": "BCL2"}]
    path.write_text(json.dumps({"question_id": "q1", "trace": trace}) + "\n")
    answer = ManualAnswerStore().answer_for(_manual(path), "q1")
    assert [m["role"] for m in answer.trace_messages] == ["user", "assistant"]
    assert "--- assistant ---\nBCL2" in answer.raw_llm_response


def test_manual_missing_question_is_an_error_in_that_result(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"other": "x"}))
    [result] = _run(ScriptedModels({}), answering=_manual(path))
    text_key = hashlib.md5(make_question().text.encode()).hexdigest()
    assert result.metadata.error == (
        "answer generation failed: no pre-recorded answer for question 'q1' "
        f"or its text's MD5 '{text_key}' in {path}"
    )


def test_manual_answers_keyed_by_md5_of_the_question_text(tmp_path: Path) -> None:
    # The original framework keys manual traces by the MD5 of the question text.
    question = make_question()
    path = tmp_path / "answers.json"
    key = hashlib.md5(question.text.encode("utf-8")).hexdigest()
    path.write_text(json.dumps({key: "It is BCL2."}))
    script = ScriptedModels({"judge": {"parsing": [{"gene": "BCL2"}]}})
    [result] = _run(script, answering=_manual(path), question=question)
    assert result.metadata.error is None
    assert result.template is not None and result.template.raw_llm_response == "It is BCL2."
    # The question id wins when both keys are present.
    path.write_text(json.dumps({key: "by text", "q1": "by id"}))
    answer = ManualAnswerStore().answer_for(_manual(path), "q1", question.text)
    assert answer.raw_llm_response == "by id"


def test_manual_file_errors_are_clear(tmp_path: Path) -> None:
    store = ManualAnswerStore()
    with pytest.raises(ManualAnswerError, match="cannot read manual answers"):
        store.answer_for(_manual(tmp_path / "absent.json"), "q1")
    bad = tmp_path / "bad.json"
    bad.write_text('[{"answer": "x"}]')
    with pytest.raises(ManualAnswerError, match="record 1: expected an object with 'question_id'"):
        store.answer_for(_manual(bad), "q1")


VERIFIED_TEMPLATE = """
from karenina.schemas.entities import BaseAnswer, VerifiedField
from karenina.schemas.entities.primitives import BooleanMatch, ExactMatch, TraceRegex
from karenina.schemas.entities.composition import AnyOf, FieldCheck


class Answer(BaseAnswer):
    target: str = VerifiedField(
        description="The drug target protein", ground_truth="bcl2",
        verify_with=ExactMatch(normalize=["lowercase", "strip"]), weight=2.0,
    )
    approved: bool = VerifiedField(
        description="True if the response states FDA approval", ground_truth=True,
        verify_with=BooleanMatch(),
    )
    cites: bool = VerifiedField(
        description="Has citations", ground_truth=True, verify_with=TraceRegex(pattern=r"\\[\\d+\\]")
    )

    class VerificationStrategy:
        verify_strategy = AnyOf(conditions=[FieldCheck(field="target"), FieldCheck(field="approved")])
"""


def test_verified_field_template_reports_fields_strategy_and_granular_score() -> None:
    script = _script(
        answer="Venetoclax targets BCL2 [1].", judge=[{"target": "BCL2", "approved": False}]
    )
    [result] = _run(script, question=make_question(VERIFIED_TEMPLATE))
    assert set(script.calls[1].schema["properties"]) == {"target", "approved"}  # type: ignore[index]
    template = result.template
    assert template is not None
    assert template.verify_result is True
    assert template.field_results == {"target": True, "approved": False, "cites": True}
    assert template.composition_strategy == "any_of"
    assert isinstance(template.verify_granular_result, float)
    assert 0.0 < template.verify_granular_result <= 1.0
    assert template.parsed_llm_response == {"target": "BCL2", "approved": False}


REGEX_ONLY_TEMPLATE = """
class Answer(BaseAnswer):
    def ground_truth(self):
        self.regex = {"gene": {"pattern": r"BCL2", "expected": "BCL2", "match_type": "exact"}}
"""


@pytest.mark.parametrize(("answer", "verified"), [("BCL2", True), ("TP53", False)])
def test_regex_only_template_needs_no_judge(answer: str, verified: bool) -> None:
    script = _script(answer=answer)
    [result] = _run(script, question=make_question(REGEX_ONLY_TEMPLATE))
    assert script.stages_called() == ["answer_generation"]
    assert result.template is not None
    assert result.template.regex_validations_performed is True
    assert result.template.regex_overall_success is verified
    assert result.template.verify_result is verified


def test_missing_api_key_is_reported_in_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    from verifleet.pipeline import PipelineResources
    from verifleet.schemas import VerificationConfig

    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    model = ModelConfig(model_name="some/model", interface="openrouter")
    config = VerificationConfig(answering_models=[model], parsing_models=[model])
    [result] = verify_question(
        make_question(),
        config.answering_models[0],
        config.parsing_models,
        config,
        replicate=None,
        resources=PipelineResources(),
    )
    assert result.metadata.error == (
        "answer generation failed: missing API key for model 'some/model' (openrouter): "
        "set the environment variable OPENROUTER_API_KEY"
    )


class _EchoCaller:
    """Answers "The gene is <last word of the question>" and parses that gene back,
    so concurrent units can be told apart by their content."""

    def __init__(self, model: ModelConfig, tracker: Any) -> None:
        self._model, self._tracker = model, tracker

    @property
    def model_name(self) -> str:
        return self._model.model_name

    def invoke(self, messages: Any, *, stage: str) -> str:
        self._tracker.record(stage, model=self.model_name, input_tokens=1, output_tokens=1)
        return f"The gene is {messages[-1]['content'].split()[-1]}"

    def invoke_json(self, messages: Any, *, stage: str, **_: Any) -> dict[str, Any]:
        self._tracker.record(stage, model=self.model_name, input_tokens=1, output_tokens=1)
        return {"gene": messages[-1]["content"].split("The gene is ")[1].split()[0]}


def test_concurrent_units_share_resources_without_mixing() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from verifleet.pipeline import PipelineResources
    from verifleet.sandbox import SandboxPool
    from verifleet.schemas import Question

    resources = PipelineResources(
        caller_factory=lambda model, *, tracker, config, deadline: _EchoCaller(model, tracker),
        sandbox=SandboxPool(),
    )
    config = make_config()

    def one(gene: str) -> VerificationResult:
        template = TEMPLATE.replace('"BCL2"', f'"{gene}"')
        question = Question(id=gene, text=f"Name {gene}", answer_template=template)
        [result] = verify_question(
            question,
            config.answering_models[0],
            config.parsing_models,
            config,
            replicate=None,
            resources=resources,
        )
        return result

    genes = [f"GENE{i}" for i in range(16)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one, genes))
    for gene, result in zip(genes, results, strict=True):
        assert result.metadata.question_id == gene
        assert result.template is not None and result.template.verify_result is True
        assert result.template.parsed_llm_response == {"gene": gene}
        assert result.template.usage_metadata is not None
        assert result.template.usage_metadata["total"]["total_tokens"] == 4
    # Each template was described by an executor exactly once.
    assert resources.sandbox.stats().described == len(genes)
