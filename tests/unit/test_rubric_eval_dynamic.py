"""Dynamic rubrics (presence check, promotion, skips, name conflicts), agentic
traits and the trait-name filter."""

from __future__ import annotations

from typing import Any

import pytest
from test_rubric_eval_fakes import ScriptedJudge, bad_json

from verifleet.pipeline._rubric_eval import RubricOutcome, evaluate_rubric
from verifleet.schemas import (
    AgenticRubricTrait,
    DynamicRubric,
    LLMRubricTrait,
    ModelConfig,
    PromptConfig,
    RegexTrait,
    Rubric,
    RubricError,
    VerificationConfig,
)

RESPONSE = "Ibuprofen helps. Do not exceed 1200 mg a day without a doctor."


def make_config(**overrides: Any) -> VerificationConfig:
    return VerificationConfig(
        parsing_models=[ModelConfig(model_name="judge")],
        parsing_only=True,
        evaluation_mode="rubric_only",
        **overrides,
    )


STATIC = Rubric(llm_traits=[LLMRubricTrait(name="clarity", kind="score")])
DYNAMIC = DynamicRubric(
    llm_traits=[
        LLMRubricTrait(name="dosage_safety", kind="boolean", summary="dosage limits"),
        LLMRubricTrait(
            name="pregnancy_advice", kind="boolean", description="Advice for pregnant patients."
        ),
    ],
    regex_traits=[RegexTrait(name="cites_mg", pattern=r"\d+ ?mg", summary="milligram amounts")],
    agentic_traits=[
        AgenticRubricTrait(name="checks_label", kind="boolean", description="Verifies the label.")
    ],
)


def run(
    judge: ScriptedJudge,
    rubric: Rubric | None = STATIC,
    dynamic: DynamicRubric | None = DYNAMIC,
    **config: Any,
) -> RubricOutcome:
    return evaluate_rubric(
        judge,
        question="How much ibuprofen?",
        response=RESPONSE,
        rubric=rubric,
        config=make_config(**config),
        question_id="q1",
        dynamic_rubric=dynamic,
    )


def test_one_presence_call_promotes_present_traits_and_skips_absent_ones() -> None:
    judge = ScriptedJudge(
        [
            {"dosage_safety": True, "pregnancy_advice": False, "cites_mg": True},
            {"clarity": 4, "dosage_safety": True},
        ]
    )
    outcome = run(judge)
    presence = judge.calls[0]
    assert presence.schema is not None
    assert sorted(presence.schema["properties"]) == [
        "cites_mg",
        "dosage_safety",
        "pregnancy_advice",
    ]
    # the concept shown is the summary when there is one, else the description
    assert "dosage limits" in presence.user and "Advice for pregnant patients." in presence.user
    assert "checks_label" not in presence.user  # agentic traits are not presence-checked
    assert judge.calls[1].schema is not None
    assert sorted(judge.calls[1].schema["properties"]) == ["clarity", "dosage_safety"]
    rubric = outcome.rubric
    assert rubric.dynamic_rubric_promoted_traits == ["dosage_safety", "cites_mg"]
    assert rubric.dynamic_rubric_skipped_traits is not None
    assert set(rubric.dynamic_rubric_skipped_traits) == {"pregnancy_advice", "checks_label"}
    assert "not present" in rubric.dynamic_rubric_skipped_traits["pregnancy_advice"]
    assert "not presence-checked" in rubric.dynamic_rubric_skipped_traits["checks_label"]
    assert rubric.llm_trait_scores == {"clarity": 4, "dosage_safety": True}
    assert rubric.regex_trait_scores == {"cites_mg": True}
    assert outcome.model_calls == 2


def test_nothing_present_means_only_static_traits_are_judged() -> None:
    judge = ScriptedJudge(
        [{"dosage_safety": False, "pregnancy_advice": False, "cites_mg": False}, {"clarity": 2}]
    )
    outcome = run(judge)
    assert outcome.rubric.dynamic_rubric_promoted_traits == []
    assert outcome.rubric.llm_trait_scores == {"clarity": 2}
    assert outcome.rubric.regex_trait_scores is None


def test_a_failed_presence_check_skips_every_dynamic_trait_with_the_reason() -> None:
    judge = ScriptedJudge([bad_json(), {"clarity": 3}])
    outcome = run(judge)
    skipped = outcome.rubric.dynamic_rubric_skipped_traits
    assert skipped is not None
    assert skipped["dosage_safety"].startswith("presence check failed")
    assert outcome.rubric.dynamic_rubric_promoted_traits == []


def test_a_concept_without_verdict_is_skipped_not_guessed() -> None:
    judge = ScriptedJudge([{"dosage_safety": "unclear", "cites_mg": True}, {"clarity": 3}])
    skipped = run(judge).rubric.dynamic_rubric_skipped_traits
    assert skipped is not None
    assert "no verdict" in skipped["dosage_safety"] and "no verdict" in skipped["pregnancy_advice"]


def test_presence_instructions_come_from_their_own_prompt_setting() -> None:
    judge = ScriptedJudge(
        [{"dosage_safety": False, "pregnancy_advice": False, "cites_mg": False}, {"clarity": 3}]
    )
    run(judge, prompt_config=PromptConfig(dynamic_rubric_presence="Count mentions in lists."))
    assert "Count mentions in lists." in judge.calls[0].system
    assert "Count mentions in lists." not in judge.calls[1].system


def test_a_dynamic_trait_named_like_a_static_one_is_refused_before_any_call() -> None:
    clash = DynamicRubric(llm_traits=[LLMRubricTrait(name="clarity", kind="boolean", summary="x")])
    judge = ScriptedJudge()
    with pytest.raises(RubricError, match="clarity"):
        run(judge, dynamic=clash)
    assert judge.calls == []


def test_static_agentic_traits_are_skipped_with_a_reason() -> None:
    rubric = Rubric(
        regex_traits=[RegexTrait(name="mg", pattern="mg")],
        agentic_traits=[AgenticRubricTrait(name="audit", kind="score", description="Audit it.")],
    )
    outcome = run(ScriptedJudge(), rubric=rubric, dynamic=None)
    assert "agent runtime" in outcome.skipped_traits["audit"]
    assert outcome.rubric.agentic_trait_scores is None
    assert outcome.rubric.regex_trait_scores == {"mg": True}
    assert outcome.rubric.dynamic_rubric_skipped_traits is None


def test_trait_filter_applies_to_dynamic_traits_too() -> None:
    judge = ScriptedJudge([{"cites_mg": True}])
    outcome = run(judge, rubric_trait_names=["cites_mg"])
    assert len(judge.calls) == 1
    assert judge.calls[0].schema is not None
    assert list(judge.calls[0].schema["properties"]) == ["cites_mg"]
    assert outcome.rubric.regex_trait_scores == {"cites_mg": True}
    assert outcome.rubric.llm_trait_scores is None
    assert outcome.rubric.dynamic_rubric_promoted_traits == ["cites_mg"]


def test_no_rubric_at_all_still_reports_an_evaluation_without_calls() -> None:
    judge = ScriptedJudge()
    outcome = run(judge, rubric=None, dynamic=None)
    assert judge.calls == []
    assert outcome.rubric.rubric_evaluation_performed is True
    assert outcome.rubric.get_all_trait_scores() == {}
