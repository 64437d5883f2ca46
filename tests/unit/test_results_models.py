"""The result data model: sections, deterministic ids, access rules, round trips."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from verifleet.schemas import (
    ModelIdentity,
    VerificationResult,
    VerificationResultDeepJudgment,
    VerificationResultDeepJudgmentRubric,
    VerificationResultMetadata,
    VerificationResultRubric,
    VerificationResultTemplate,
)

SONNET = ModelIdentity(interface="langchain", model_name="claude-sonnet-4-5-20250514")
HAIKU = ModelIdentity(interface="langchain", model_name="claude-haiku-4-5-20251001")


def _metadata(**overrides: Any) -> VerificationResultMetadata:
    fields: dict[str, Any] = {
        "question_id": "q1",
        "template_id": "no_template",
        "question_text": "What is the putative target of venetoclax?",
        "answering": SONNET,
        "parsing": HAIKU,
        "completed_without_errors": True,
        "execution_time": 1.2,
        "timestamp": "2025-06-15T10:00:00Z",
        "replicate": 1,
    }
    fields.update(overrides)
    return VerificationResultMetadata(**fields)


def _rubric() -> VerificationResultRubric:
    return VerificationResultRubric(
        rubric_evaluation_performed=True,
        llm_trait_scores={"safety": True, "clarity": 4, "response_type": 0},
        llm_trait_labels={"response_type": "Factual"},
        regex_trait_scores={"has_citations": True},
        callable_trait_scores={"under_150w": True},
        metric_trait_scores={
            "drug_coverage": {
                "tp": 3.0,
                "fn": 1.0,
                "fp": 0.0,
                "precision": 1.0,
                "recall": 0.75,
                "f1": 0.857,
            }
        },
        metric_trait_confusion_lists={
            "drug_coverage": {
                "tp": ["aspirin", "ibuprofen", "acetaminophen"],
                "fn": ["naproxen"],
                "fp": [],
                "tn": [],
            }
        },
    )


def test_result_id_matches_spec_worked_example() -> None:
    first = VerificationResultMetadata.compute_result_id(
        question_id="q1",
        answering=SONNET,
        parsing=HAIKU,
        timestamp="2025-06-15T10:00:00Z",
        replicate=1,
    )
    again = VerificationResultMetadata.compute_result_id(
        "q1", SONNET, HAIKU, "2025-06-15T10:00:00Z", 1
    )
    assert first == again == "e6972c44b765e7c3"


def test_result_id_changes_with_each_input() -> None:
    base = VerificationResultMetadata.compute_result_id("q1", SONNET, HAIKU, "t", 1)
    assert VerificationResultMetadata.compute_result_id("q2", SONNET, HAIKU, "t", 1) != base
    assert VerificationResultMetadata.compute_result_id("q1", HAIKU, HAIKU, "t", 1) != base
    assert VerificationResultMetadata.compute_result_id("q1", SONNET, SONNET, "t", 1) != base
    assert VerificationResultMetadata.compute_result_id("q1", SONNET, HAIKU, "u", 1) != base
    assert VerificationResultMetadata.compute_result_id("q1", SONNET, HAIKU, "t", 2) != base
    assert VerificationResultMetadata.compute_result_id("q1", SONNET, HAIKU, "t") != base


def test_omitted_result_id_is_computed_and_given_one_is_kept() -> None:
    assert _metadata().result_id == "e6972c44b765e7c3"
    assert _metadata(result_id="abcdef0123456789").result_id == "abcdef0123456789"


def test_metadata_defaults_and_model_properties() -> None:
    meta = _metadata()
    assert meta.answering_model == "langchain:claude-sonnet-4-5-20250514"
    assert meta.parsing_model == "langchain:claude-haiku-4-5-20251001"
    assert meta.answering.canonical_key == "langchain:claude-sonnet-4-5-20250514:"
    assert (meta.few_shot_enabled, meta.few_shot_example_count, meta.evaluation_mode) == (
        False,
        0,
        None,
    )
    scenario = (meta.scenario_id, meta.scenario_node, meta.scenario_turn, meta.scenario_path)
    assert scenario == (None, None, None, None)


def test_metadata_requires_core_fields_and_rejects_unknown() -> None:
    with pytest.raises(ValidationError, match="completed_without_errors"):
        VerificationResultMetadata(
            question_id="q1",
            template_id="t",
            question_text="?",
            answering=SONNET,
            parsing=HAIKU,
            execution_time=0.1,
            timestamp="t",
        )
    with pytest.raises(ValidationError, match="verify_reslt"):
        VerificationResultTemplate(verify_reslt=True)  # type: ignore[call-arg]


def test_flat_access_raises_attribute_error() -> None:
    result = VerificationResult(metadata=_metadata())
    with pytest.raises(AttributeError) as info:
        _ = result.question_id  # type: ignore[attr-defined]
    assert str(info.value) == "'VerificationResult' object has no attribute 'question_id'"
    for name in ("verify_result", "completed_without_errors", "answering_model"):
        assert not hasattr(result, name)


def test_root_defaults() -> None:
    result = VerificationResult(metadata=_metadata())
    assert result.evaluation_input is None
    assert result.used_full_trace is True
    assert result.trace_extraction_error is None


def test_section_field_counts_cover_the_spec() -> None:
    # The spec's ten fields plus the original's deep_judgment_mode.
    assert len(VerificationResultDeepJudgment.model_fields) == 11
    assert len(VerificationResultDeepJudgmentRubric.model_fields) == 11
    spec_template = {
        "raw_llm_response", "trace_messages", "parsed_llm_response", "parsed_gt_response",
        "template_verification_performed", "verify_result", "verify_granular_result",
        "embedding_check_performed", "embedding_similarity_score",
        "embedding_override_applied", "embedding_model_used",
        "regex_validations_performed", "regex_validation_results",
        "regex_validation_details", "regex_overall_success", "regex_extraction_results",
        "abstention_check_performed", "abstention_detected", "abstention_override_applied",
        "abstention_reasoning", "sufficiency_check_performed", "sufficiency_detected",
        "sufficiency_override_applied", "sufficiency_reasoning", "recursion_limit_reached",
        "answering_mcp_servers", "agent_metrics", "usage_metadata",
    }  # fmt: skip
    assert len(spec_template) == 28
    assert spec_template <= set(VerificationResultTemplate.model_fields)
    assert {
        "field_verification_error",
        "field_results",
        "composition_strategy",
        "template_validation_error",
    } <= set(VerificationResultTemplate.model_fields)
    assert len(VerificationResult.model_fields) == 8


def test_get_all_trait_scores_and_lookup_match_spec() -> None:
    rubric = _rubric()
    all_scores = rubric.get_all_trait_scores()
    assert all_scores["clarity"] == 4
    assert all_scores["has_citations"] is True
    assert all_scores["drug_coverage"]["recall"] == 0.75
    assert list(all_scores) == [
        "safety",
        "clarity",
        "response_type",
        "has_citations",
        "under_150w",
        "drug_coverage",
    ]
    assert rubric.get_trait_by_name("safety") == (True, "llm")
    assert rubric.get_trait_by_name("has_citations") == (True, "regex")
    assert rubric.get_trait_by_name("under_150w") == (True, "callable")
    assert rubric.get_trait_by_name("drug_coverage")[1] == "metric"  # type: ignore[index]
    assert rubric.get_trait_by_name("missing") is None
    assert rubric.get_llm_trait_labels() == {"response_type": "Factual"}
    assert VerificationResultRubric().get_llm_trait_labels() == {}
    assert VerificationResultRubric().get_all_trait_scores() == {}


def test_bool_and_int_scores_keep_their_type() -> None:
    rubric = _rubric()
    assert rubric.llm_trait_scores is not None
    assert type(rubric.llm_trait_scores["safety"]) is bool
    assert type(rubric.llm_trait_scores["clarity"]) is int


def test_full_result_round_trips_through_json() -> None:
    result = VerificationResult(
        metadata=_metadata(keywords=["oncology"], evaluation_mode="template_and_rubric"),
        template=VerificationResultTemplate(
            raw_llm_response="BCL2",
            trace_messages=[{"role": "ai", "content": "BCL2"}],
            parsed_llm_response={"target": "BCL2"},
            parsed_gt_response={"target": "BCL2"},
            template_verification_performed=True,
            verify_result=True,
            verify_granular_result={"target": 1.0, "nested": [1, None, "x"]},
            field_results={"target": True, "other": None},
            embedding_check_performed=True,
            embedding_similarity_score=0.92,
            usage_metadata={"total": {"input_tokens": 3, "output_tokens": 4}},
        ),
        rubric=_rubric(),
        deep_judgment=VerificationResultDeepJudgment(
            deep_judgment_enabled=True,
            extracted_excerpts={"target": [{"text": "BCL2", "similarity_score": 0.9}]},
        ),
        deep_judgment_rubric=VerificationResultDeepJudgmentRubric(
            deep_judgment_rubric_scores={"clarity": 4, "safety": True}
        ),
        evaluation_input="BCL2",
    )
    dumped = result.model_dump(mode="json")
    back = VerificationResult.model_validate(dumped)
    assert back == result
    assert back.model_dump(mode="json") == dumped
    assert VerificationResult.model_validate_json(result.model_dump_json()) == result


@pytest.mark.parametrize(
    ("mode", "has_template", "has_rubric"),
    [
        ("template_only", True, False),
        ("template_and_rubric", True, True),
        ("rubric_only", False, True),
    ],
)
def test_sections_present_per_evaluation_mode(
    mode: str, has_template: bool, has_rubric: bool
) -> None:
    # The pipeline fills sections by mode; the model must represent each shape and
    # keep an absent section as None (not an empty section) across a round trip.
    result = VerificationResult(
        metadata=_metadata(evaluation_mode=mode),
        template=VerificationResultTemplate(verify_result=True) if has_template else None,
        rubric=_rubric() if has_rubric else None,
    )
    back = VerificationResult.model_validate(result.model_dump(mode="json"))
    assert (back.template is not None) is has_template
    assert (back.rubric is not None) is has_rubric
    assert back.deep_judgment is None and back.deep_judgment_rubric is None


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)
names = st.text(min_size=1, max_size=6)


@given(
    granular=json_values,
    parsed=st.dictionaries(names, json_values, max_size=3),
    llm_scores=st.dictionaries(names, st.booleans() | st.integers(-1, 10), max_size=4),
    metrics=st.dictionaries(
        names, st.dictionaries(names, st.floats(allow_nan=False, allow_infinity=False)), max_size=2
    ),
    replicate=st.none() | st.integers(1, 50),
    with_template=st.booleans(),
)
@settings(max_examples=60, deadline=None)
def test_any_result_round_trips_through_json(
    granular: Any,
    parsed: dict[str, Any],
    llm_scores: dict[str, Any],
    metrics: dict[str, dict[str, float]],
    replicate: int | None,
    with_template: bool,
) -> None:
    # Exporters rely on dump -> validate being the identity for every value shape.
    result = VerificationResult(
        metadata=_metadata(replicate=replicate),
        template=(
            VerificationResultTemplate(
                verify_granular_result=granular,
                parsed_llm_response=parsed,
                regex_extraction_results=parsed,
            )
            if with_template
            else None
        ),
        rubric=VerificationResultRubric(llm_trait_scores=llm_scores, metric_trait_scores=metrics),
    )
    back = VerificationResult.model_validate_json(result.model_dump_json())
    assert back == result
    assert back.model_dump(mode="json") == result.model_dump(mode="json")
    assert back.rubric is not None and back.rubric.llm_trait_scores is not None
    for name, score in llm_scores.items():
        assert type(back.rubric.llm_trait_scores[name]) is type(score)
