"""LLM traits: batch vs sequential calls, literal index + label, value validation."""

from __future__ import annotations

from typing import Any

import pytest
from test_rubric_eval_fakes import ScriptedJudge, bad_json

from verifleet.pipeline._llm_protocol import ModelCallError
from verifleet.pipeline._rubric_eval import (
    INVALID_CLASS_INDEX,
    RubricOutcome,
    coerce_trait_value,
    evaluate_rubric,
)
from verifleet.pipeline._rubric_eval.values import InvalidTraitValue
from verifleet.schemas import (
    LLMRubricTrait,
    ModelConfig,
    PromptConfig,
    Rubric,
    VerificationConfig,
)

QUESTION = "Which organ does KRAS matter most in?"
RESPONSE = "KRAS is most essential in the pancreas, according to several studies."


def make_config(**overrides: Any) -> VerificationConfig:
    return VerificationConfig(
        parsing_models=[ModelConfig(model_name="judge")],
        parsing_only=True,
        evaluation_mode="rubric_only",
        **overrides,
    )


def traits() -> list[LLMRubricTrait]:
    return [
        LLMRubricTrait(name="safe", kind="boolean", description="Free of harmful advice."),
        LLMRubricTrait(
            name="clarity", kind="score", min_score=1, max_score=5, description="Easy to follow."
        ),
        LLMRubricTrait(
            name="tone",
            kind="literal",
            classes={"Casual": "chatty", "Neutral": "plain", "Formal": "academic"},
            description="Register of the writing.",
        ),
    ]


def run(judge: ScriptedJudge, strategy: str = "batch", **config: Any) -> RubricOutcome:
    return evaluate_rubric(
        judge,
        question=QUESTION,
        response=RESPONSE,
        rubric=Rubric(llm_traits=traits()),
        config=make_config(rubric_evaluation_strategy=strategy, **config),
        question_id="q1",
    )


def test_batch_judges_all_traits_in_one_call_with_one_property_each() -> None:
    judge = ScriptedJudge([{"safe": True, "clarity": 4, "tone": "Formal"}])
    outcome = run(judge)
    assert len(judge.calls) == 1
    call = judge.calls[0]
    assert call.stage == "rubric_evaluation"
    assert call.schema is not None
    props = call.schema["properties"]
    assert props["safe"] == {"type": "boolean"}
    assert props["clarity"] == {"type": "integer", "minimum": 1, "maximum": 5}
    assert props["tone"] == {"type": "string", "enum": ["Casual", "Neutral", "Formal"]}
    assert sorted(call.schema["required"]) == ["clarity", "safe", "tone"]
    for text in (QUESTION, RESPONSE, "Easy to follow.", "Free of harmful advice.", "academic"):
        assert text in call.user
    rubric = outcome.rubric
    assert rubric.rubric_evaluation_performed is True
    assert rubric.rubric_evaluation_strategy == "batch"
    assert rubric.llm_trait_scores == {"safe": True, "clarity": 4, "tone": 2}
    assert rubric.llm_trait_labels == {"tone": "Formal"}
    assert outcome.model_calls == 1
    assert outcome.deep_judgment_rubric is None


def test_sequential_makes_one_call_per_trait_each_about_that_trait_only() -> None:
    judge = ScriptedJudge([{"safe": False}, {"clarity": 2}, {"tone": "Casual"}])
    outcome = run(judge, strategy="sequential")
    assert len(judge.calls) == 3
    assert [list(c.schema["properties"]) for c in judge.calls if c.schema] == [
        ["safe"],
        ["clarity"],
        ["tone"],
    ]
    assert "Easy to follow." not in judge.calls[0].user
    assert "Easy to follow." in judge.calls[1].user
    assert outcome.rubric.rubric_evaluation_strategy == "sequential"
    assert outcome.rubric.llm_trait_scores == {"safe": False, "clarity": 2, "tone": 0}
    assert outcome.rubric.llm_trait_labels == {"tone": "Casual"}
    assert outcome.model_calls == 3


@pytest.mark.parametrize(("raw", "expected"), [(9, 5), (-3, 1), ("4", 4), (3.6, 4)])
def test_out_of_range_scores_are_clamped(raw: object, expected: int) -> None:
    judge = ScriptedJudge([{"safe": True, "clarity": raw, "tone": "Neutral"}])
    assert run(judge).rubric.llm_trait_scores == {"safe": True, "clarity": expected, "tone": 1}


def test_unknown_literal_class_scores_minus_one_and_keeps_the_raw_label() -> None:
    judge = ScriptedJudge([{"safe": True, "clarity": 3, "tone": "Sarcastic"}])
    rubric = run(judge).rubric
    assert rubric.llm_trait_scores is not None
    assert rubric.llm_trait_scores["tone"] == INVALID_CLASS_INDEX == -1
    assert rubric.llm_trait_labels == {"tone": "Sarcastic"}


def test_malformed_value_for_one_trait_leaves_only_that_trait_unscored() -> None:
    judge = ScriptedJudge([{"safe": "maybe", "clarity": 5, "tone": "formal"}])
    outcome = run(judge)
    assert outcome.rubric.llm_trait_scores == {"clarity": 5, "tone": 2}
    assert outcome.rubric.llm_trait_labels == {"tone": "Formal"}
    assert set(outcome.failed_traits) == {"safe"}
    assert "expected a boolean" in outcome.failed_traits["safe"]


def test_missing_trait_in_batch_reply_is_recorded_as_failed() -> None:
    judge = ScriptedJudge([{"safe": True, "tone": "Neutral"}])
    outcome = run(judge)
    assert outcome.rubric.llm_trait_scores == {"safe": True, "tone": 1}
    assert "no value" in outcome.failed_traits["clarity"]


def test_unusable_batch_reply_falls_back_to_one_call_per_trait() -> None:
    judge = ScriptedJudge([bad_json(), {"safe": True}, bad_json(), {"tone": "Neutral"}])
    outcome = run(judge)
    assert len(judge.calls) == 4
    assert outcome.model_calls == 4
    assert outcome.rubric.llm_trait_scores == {"safe": True, "tone": 1}
    assert set(outcome.failed_traits) == {"clarity"}


def test_sequential_schema_failure_costs_only_that_trait() -> None:
    judge = ScriptedJudge([{"safe": True}, bad_json(), {"tone": "Formal"}])
    outcome = run(judge, strategy="sequential")
    assert outcome.rubric.llm_trait_scores == {"safe": True, "tone": 2}
    assert "valid JSON" in outcome.failed_traits["clarity"]


def test_user_instructions_are_appended_to_the_system_prompt() -> None:
    judge = ScriptedJudge([{"safe": True, "clarity": 4, "tone": "Formal"}])
    run(judge, prompt_config=PromptConfig(rubric_evaluation="Be lenient with typos."))
    assert "Be lenient with typos." in judge.calls[0].system
    assert "Be lenient with typos." not in judge.calls[0].user


def test_trait_name_filter_runs_only_the_named_traits() -> None:
    judge = ScriptedJudge([{"clarity": 3}])
    outcome = run(judge, rubric_trait_names=["clarity"])
    assert len(judge.calls) == 1
    assert judge.calls[0].schema is not None
    assert list(judge.calls[0].schema["properties"]) == ["clarity"]
    assert outcome.rubric.llm_trait_scores == {"clarity": 3}
    assert outcome.rubric.llm_trait_labels is None


def test_model_call_errors_propagate_for_the_stage_to_record() -> None:
    # A judge that is unreachable is not a content problem: the stage decides.
    judge = ScriptedJudge([ModelCallError("503 after 4 attempts", transient=True, attempts=4)])
    with pytest.raises(ModelCallError):
        run(judge)


def test_template_kind_traits_fill_their_schema_into_dotted_keys() -> None:
    schema = {
        "type": "object",
        "properties": {
            "steps": {"type": "integer"},
            "cited": {"type": "boolean"},
            "tone": {"type": "string"},
            "ratio": {"type": "number"},
        },
    }
    template = LLMRubricTrait(name="structured", kind="template", template_schema=schema)
    judge = ScriptedJudge([{"steps": 3, "cited": True, "tone": "calm", "ratio": 0.5}])
    outcome = evaluate_rubric(
        judge,
        question=QUESTION,
        response=RESPONSE,
        rubric=Rubric(llm_traits=[template]),
        config=make_config(),
        question_id="q1",
    )
    assert len(judge.calls) == 1 and judge.calls[0].schema == schema  # the trait's own schema
    assert outcome.rubric.llm_trait_scores == {"structured.steps": 3, "structured.cited": True}
    assert outcome.rubric.llm_trait_labels == {"structured.tone": "calm"}
    # A float has no place in the typed result maps: reported, not silently dropped.
    assert "float" in outcome.failed_traits["structured.ratio"]


# --- the validation policy, trait by trait ----------------------------------------------

BOOL = LLMRubricTrait(name="b", kind="boolean")
SCORE = LLMRubricTrait(name="s", kind="score", min_score=0, max_score=10)
LITERAL = LLMRubricTrait(name="l", kind="literal", classes=["low", "high"])


@pytest.mark.parametrize(
    ("raw", "score"), [(True, True), ("yes", True), ("False", False), (0, False), (1, True)]
)
def test_boolean_values_accepted(raw: object, score: bool) -> None:
    assert coerce_trait_value(BOOL, raw).score is score


@pytest.mark.parametrize("raw", [None, 2, "perhaps", 0.5, [True]])
def test_boolean_values_refused(raw: object) -> None:
    with pytest.raises(InvalidTraitValue):
        coerce_trait_value(BOOL, raw)


@pytest.mark.parametrize("raw", [True, "seven", float("nan"), None, {"score": 3}])
def test_score_values_refused(raw: object) -> None:
    with pytest.raises(InvalidTraitValue):
        coerce_trait_value(SCORE, raw)


def test_score_bounds_are_the_traits_own() -> None:
    assert coerce_trait_value(SCORE, 0).score == 0
    assert coerce_trait_value(SCORE, 11).score == 10


@pytest.mark.parametrize(
    ("raw", "index", "label"),
    [("HIGH ", 1, "high"), (0, 0, "low"), (5, -1, "5"), (True, -1, "True")],
)
def test_literal_values(raw: object, index: int, label: str) -> None:
    value = coerce_trait_value(LITERAL, raw)
    assert (value.score, value.label) == (index, label)
