"""Deep judgment of rubric traits: which traits get it per mode, excerpt validation
with retries, auto-fail, and the ``deep_judgment_rubric`` section."""

from __future__ import annotations

from typing import Any

import pytest
from test_rubric_eval_fakes import ScriptedJudge, bad_json

from verifleet.pipeline._llm_protocol import ModelCallError
from verifleet.pipeline._rubric_eval import (
    DeepJudgmentSettings,
    RubricOutcome,
    evaluate_rubric,
    excerpt_similarity,
    resolve_deep_judgment,
)
from verifleet.schemas import ConfigError, LLMRubricTrait, ModelConfig, Rubric, VerificationConfig

RESPONSE = (
    "KRAS is most essential in the pancreas. Mutations there drive most pancreatic "
    "cancers, so targeting KRAS is an active field."
)
QUOTE = "KRAS is most essential in the pancreas."


def make_config(**overrides: Any) -> VerificationConfig:
    return VerificationConfig(
        parsing_models=[ModelConfig(model_name="judge")],
        parsing_only=True,
        evaluation_mode="rubric_only",
        **overrides,
    )


CLARITY = LLMRubricTrait(name="clarity", kind="score", description="Clear and direct.")
GROUNDED = LLMRubricTrait(
    name="grounded",
    kind="boolean",
    description="Claims are supported.",
    deep_judgment_enabled=True,
    deep_judgment_fuzzy_match_threshold=0.95,
    deep_judgment_excerpt_retry_attempts=1,
    deep_judgment_max_excerpts=2,
)


def run(judge: ScriptedJudge, traits: list[LLMRubricTrait], **config: Any) -> RubricOutcome:
    return evaluate_rubric(
        judge,
        question="Where is KRAS most essential?",
        response=RESPONSE,
        rubric=Rubric(llm_traits=traits),
        config=make_config(**config),
        question_id="q1",
    )


# --- which traits get deep judgment ------------------------------------------------------


def enabled(trait: LLMRubricTrait, question_id: str = "q1", **config: Any) -> bool:
    return resolve_deep_judgment(
        trait, question_id=question_id, config=make_config(**config)
    ).enabled


def test_disabled_mode_turns_deep_judgment_off_even_for_checkpoint_traits() -> None:
    assert not enabled(GROUNDED, deep_judgment_rubric_mode="disabled")


def test_enable_all_uses_config_defaults_and_the_global_excerpt_switch() -> None:
    settings = resolve_deep_judgment(
        CLARITY,
        question_id="q1",
        config=make_config(
            deep_judgment_rubric_mode="enable_all",
            deep_judgment_rubric_global_excerpts=False,
            deep_judgment_rubric_max_excerpts_default=4,
        ),
    )
    assert settings == DeepJudgmentSettings(
        enabled=True,
        excerpt_enabled=False,
        max_excerpts=4,
        fuzzy_match_threshold=0.8,
        excerpt_retry_attempts=2,
    )


def test_use_checkpoint_follows_each_traits_own_settings() -> None:
    config = make_config(deep_judgment_rubric_mode="use_checkpoint")
    assert not resolve_deep_judgment(CLARITY, question_id="q1", config=config).enabled
    settings = resolve_deep_judgment(GROUNDED, question_id="q1", config=config)
    assert (
        settings.max_excerpts,
        settings.fuzzy_match_threshold,
        settings.excerpt_retry_attempts,
    ) == (
        2,
        0.95,
        1,
    )


def test_custom_mode_prefers_question_specific_entries_over_global_ones() -> None:
    tree = {
        "global": {"clarity": {"enabled": True, "excerpt_enabled": False}},
        "question_specific": {"q2": {"clarity": {"enabled": False}}},
    }
    config = make_config(deep_judgment_rubric_mode="custom", deep_judgment_rubric_config=tree)
    on_q1 = resolve_deep_judgment(CLARITY, question_id="q1", config=config)
    assert on_q1.enabled and not on_q1.excerpt_enabled
    assert not resolve_deep_judgment(CLARITY, question_id="q2", config=config).enabled
    # a trait in neither section is off, whatever its own settings say
    assert not resolve_deep_judgment(GROUNDED, question_id="q1", config=config).enabled


def test_custom_mode_rejects_an_invalid_entry_naming_its_path() -> None:
    tree = {"global": {"clarity": {"fuzzy_match_threshold": 3}}}
    config = make_config(deep_judgment_rubric_mode="custom", deep_judgment_rubric_config=tree)
    with pytest.raises(ConfigError, match=r"global\.clarity"):
        resolve_deep_judgment(CLARITY, question_id="q1", config=config)


# --- the deep-judgment flow ----------------------------------------------------------


def test_refused_excerpts_are_retried_with_feedback_then_scored() -> None:
    judge = ScriptedJudge(
        [
            {"clarity": 4},  # standard trait, batch call
            {"excerpts": [{"text": "KRAS is irrelevant everywhere", "confidence": "high"}]},
            {"excerpts": [{"text": QUOTE.upper(), "confidence": "high"}]},
            "The quote states the claim directly.",
            {"score": True},
        ]
    )
    outcome = run(judge, [CLARITY, GROUNDED], deep_judgment_rubric_mode="use_checkpoint")
    retry = judge.calls[2]
    assert "KRAS is irrelevant everywhere" in retry.user and "0.95" in retry.user
    assert QUOTE.upper() in judge.calls[3].user  # reasoning sees the accepted evidence
    assert judge.calls[3].kind == "text"
    section = outcome.deep_judgment_rubric
    assert section is not None and section.deep_judgment_rubric_performed
    assert section.deep_judgment_rubric_scores == {"grounded": True}
    assert section.standard_rubric_scores == {"clarity": 4}
    assert section.extracted_rubric_excerpts == {
        "grounded": [{"text": QUOTE.upper(), "confidence": "high", "similarity_score": 1.0}]
    }
    assert section.rubric_trait_reasoning == {"grounded": "The quote states the claim directly."}
    assert section.trait_metadata == {
        "grounded": {
            "stages_completed": ["excerpt_extraction", "reasoning_generation", "score_extraction"],
            "model_calls": 4,
            "had_excerpts": True,
            "excerpt_retry_count": 1,
            "excerpt_validation_failed": False,
        }
    }
    assert section.traits_without_valid_excerpts == []
    assert (section.total_deep_judgment_model_calls, section.total_traits_evaluated) == (4, 1)
    assert section.total_excerpt_retries == 1
    assert outcome.rubric.llm_trait_scores == {"clarity": 4, "grounded": True}
    assert outcome.traits_without_valid_excerpts == []
    assert outcome.model_calls == 5


def test_excerpts_never_validated_auto_fail_the_trait() -> None:
    judge = ScriptedJudge([{"excerpts": [{"text": "invented", "confidence": "low"}]}, bad_json()])
    outcome = run(judge, [GROUNDED], deep_judgment_rubric_mode="use_checkpoint")
    assert len(judge.calls) == 2  # one attempt + the trait's single retry; no reasoning
    section = outcome.deep_judgment_rubric
    assert section is not None
    assert section.traits_without_valid_excerpts == ["grounded"]
    assert section.deep_judgment_rubric_scores == {}
    assert section.trait_metadata is not None
    meta = section.trait_metadata["grounded"]
    assert meta["excerpt_validation_failed"] is True
    assert meta["stages_completed"] == []
    assert meta["excerpt_retry_count"] == 1
    assert outcome.rubric.llm_trait_scores == {}
    assert outcome.traits_without_valid_excerpts == ["grounded"]
    assert "no valid excerpt" in outcome.failed_traits["grounded"]


def test_an_empty_excerpt_list_counts_as_a_failed_attempt() -> None:
    judge = ScriptedJudge(
        [
            {"excerpts": []},
            {"excerpts": [{"text": QUOTE, "confidence": "medium"}]},
            "ok",
            {"score": 1},
        ]
    )
    outcome = run(judge, [GROUNDED], deep_judgment_rubric_mode="use_checkpoint")
    assert "no excerpts" in judge.calls[1].user
    assert outcome.rubric.llm_trait_scores == {"grounded": True}


def test_without_excerpts_only_reasoning_and_score_run() -> None:
    literal = LLMRubricTrait(name="tone", kind="literal", classes=["casual", "formal"])
    judge = ScriptedJudge(["Reads like a paper.", {"score": "Formal"}])
    outcome = run(
        judge,
        [literal],
        deep_judgment_rubric_mode="enable_all",
        deep_judgment_rubric_global_excerpts=False,
    )
    assert [c.kind for c in judge.calls] == ["text", "json"]
    assert RESPONSE in judge.calls[0].user
    assert outcome.rubric.llm_trait_scores == {"tone": 1}
    assert outcome.rubric.llm_trait_labels == {"tone": "formal"}
    section = outcome.deep_judgment_rubric
    assert section is not None and section.extracted_rubric_excerpts == {}
    assert section.trait_metadata is not None
    assert section.trait_metadata["tone"]["had_excerpts"] is False
    assert section.trait_metadata["tone"]["stages_completed"] == [
        "reasoning_generation",
        "score_extraction",
    ]


def test_a_failed_score_extraction_auto_fails_the_trait() -> None:
    # As in the original: a deep-judgment trait whose scoring fails auto-fails.
    judge = ScriptedJudge(["fine", bad_json()])
    outcome = run(
        judge,
        [CLARITY],
        deep_judgment_rubric_mode="enable_all",
        deep_judgment_rubric_global_excerpts=False,
    )
    section = outcome.deep_judgment_rubric
    assert section is not None
    assert section.traits_without_valid_excerpts == ["clarity"]
    assert section.deep_judgment_rubric_scores == {}
    assert outcome.traits_without_valid_excerpts == ["clarity"]
    assert "score extraction failed" in outcome.failed_traits["clarity"]


def test_a_judge_call_failing_for_good_auto_fails_only_that_trait() -> None:
    # ModelCallError stands in for a judge that keeps failing (the real caller
    # raises it after its retries); the next trait is still judged.
    judge = ScriptedJudge(
        [
            ModelCallError("503 Service Unavailable", transient=True, attempts=4),
            "fine",
            {"score": 4},
        ]
    )
    other = CLARITY.model_copy(update={"name": "depth"})
    outcome = run(
        judge,
        [CLARITY, other],
        deep_judgment_rubric_mode="enable_all",
        deep_judgment_rubric_global_excerpts=False,
    )
    section = outcome.deep_judgment_rubric
    assert section is not None
    assert section.traits_without_valid_excerpts == ["clarity"]
    assert section.deep_judgment_rubric_scores == {"depth": 4}
    assert section.trait_metadata is not None
    assert "503" in str(section.trait_metadata["clarity"]["error"])
    assert outcome.rubric.llm_trait_scores == {"depth": 4}


def test_disabled_mode_makes_no_deep_judgment_section() -> None:
    judge = ScriptedJudge([{"grounded": True}])
    outcome = run(judge, [GROUNDED])
    assert outcome.deep_judgment_rubric is None
    assert len(judge.calls) == 1


def test_excerpt_similarity_tolerates_layout_but_not_paraphrase() -> None:
    assert excerpt_similarity("kras is most\n essential in the PANCREAS", RESPONSE) == 1.0
    assert excerpt_similarity("KRAS is mostly essential in the pancreas", RESPONSE) > 0.9
    assert excerpt_similarity("The liver depends on BRCA1 entirely", RESPONSE) < 0.8
    assert excerpt_similarity("   ", RESPONSE) == 0.0
