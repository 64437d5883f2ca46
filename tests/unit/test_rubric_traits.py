"""LLM, regex, metric and agentic trait models: validation, helpers, JSON round trip."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from verifleet.schemas import (
    AgenticRubricTrait,
    CallableTrait,
    LLMRubricTrait,
    MetricRubricTrait,
    RegexTrait,
)


class TestLLMRubricTrait:
    def test_score_defaults_to_one_to_five(self) -> None:
        trait = LLMRubricTrait(name="clarity", kind="score")
        assert (trait.min_score, trait.max_score) == (1, 5)

    def test_boolean_has_no_bounds(self) -> None:
        trait = LLMRubricTrait(name="safe", kind="boolean", min_score=1, max_score=5)
        assert (trait.min_score, trait.max_score) == (None, None)

    def test_score_bounds_must_be_ordered(self) -> None:
        with pytest.raises(ValidationError, match="must be below max_score"):
            LLMRubricTrait(name="depth", kind="score", min_score=5, max_score=5)

    def test_literal_from_mapping_keeps_order_and_descriptions(self) -> None:
        trait = LLMRubricTrait(
            name="tone",
            kind="literal",
            classes={"formal": "academic", "neutral": "plain", "casual": "chatty"},
        )
        assert trait.classes == ["formal", "neutral", "casual"]
        assert trait.class_descriptions == {
            "formal": "academic",
            "neutral": "plain",
            "casual": "chatty",
        }
        assert (trait.min_score, trait.max_score) == (0, 2)
        assert trait.class_index("Casual") == 2
        assert trait.class_index("sarcastic") == -1
        assert trait.class_label(1) == "neutral"
        assert trait.class_label(3) is None

    def test_literal_needs_classes(self) -> None:
        with pytest.raises(ValidationError, match="needs classes"):
            LLMRubricTrait(name="tone", kind="literal")

    @pytest.mark.parametrize(
        "classes",
        [["only"], ["a", "A"], ["ok", "  "], [f"c{i}" for i in range(21)]],
    )
    def test_literal_rejects_bad_class_lists(self, classes: list[str]) -> None:
        with pytest.raises(ValidationError):
            LLMRubricTrait(name="tone", kind="literal", classes=classes)

    def test_validate_score_by_kind(self) -> None:
        boolean = LLMRubricTrait(name="b")
        score = LLMRubricTrait(name="s", kind="score", min_score=0, max_score=3)
        literal = LLMRubricTrait(name="l", kind="literal", classes=["x", "y"])
        assert boolean.validate_score(True) and not boolean.validate_score(1)
        assert score.validate_score(3) and not score.validate_score(4)
        assert not score.validate_score(True)
        assert literal.validate_score(-1) and literal.validate_score(1)
        assert not literal.validate_score(2)

    def test_template_kind_from_original_dict(self) -> None:
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
        trait = LLMRubricTrait(name="struct", kind={"type": "template", "schema": schema})  # type: ignore[arg-type]
        assert trait.kind == "template"
        assert trait.template_schema == schema
        assert trait.higher_is_better is None

    def test_deep_judgment_threshold_is_bounded(self) -> None:
        with pytest.raises(ValidationError):
            LLMRubricTrait(name="x", deep_judgment_fuzzy_match_threshold=1.5)

    def test_blank_name_is_refused(self) -> None:
        with pytest.raises(ValidationError, match="blank"):
            LLMRubricTrait(name="   ")

    def test_unknown_field_is_refused(self) -> None:
        with pytest.raises(ValidationError, match="extra"):
            LLMRubricTrait(name="x", colour="red")  # type: ignore[call-arg]


class TestRegexTrait:
    def test_match_case_sensitive_by_default(self) -> None:
        trait = RegexTrait(name="cite", pattern=r"\[\d+\]")
        assert trait.evaluate("as shown [12]")
        assert not trait.evaluate("as shown (12)")
        assert not RegexTrait(name="p", pattern="Paris").evaluate("paris")

    def test_case_insensitive(self) -> None:
        assert RegexTrait(name="p", pattern="Paris", case_sensitive=False).evaluate("PARIS!")

    def test_invert(self) -> None:
        trait = RegexTrait(name="no_sorry", pattern=r"\bsorry\b", invert_result=True)
        assert trait.evaluate("Here is the answer.")
        assert not trait.evaluate("I am sorry, I cannot.")

    def test_invalid_pattern_is_refused_at_construction(self) -> None:
        with pytest.raises(ValidationError, match="invalid regular expression"):
            RegexTrait(name="bad", pattern="(unclosed")


class TestMetricRubricTrait:
    def test_tp_only_buckets(self) -> None:
        trait = MetricRubricTrait(name="m", metrics=["precision", "f1"], tp_instructions=["a"])
        assert trait.required_buckets() == {"tp", "fn", "fp"}

    def test_needs_tp_instructions(self) -> None:
        with pytest.raises(ValidationError, match="tp_instructions"):
            MetricRubricTrait(name="m", metrics=["recall"])

    def test_full_matrix_needs_tn_instructions(self) -> None:
        with pytest.raises(ValidationError, match="tn_instructions"):
            MetricRubricTrait(
                name="m", metrics=["accuracy"], evaluation_mode="full_matrix", tp_instructions=["a"]
            )

    @pytest.mark.parametrize("metric", ["specificity", "accuracy"])
    def test_tp_only_refuses_metrics_needing_negatives(self, metric: str) -> None:
        with pytest.raises(ValidationError, match="full_matrix"):
            MetricRubricTrait(name="m", metrics=[metric], tp_instructions=["a"])

    def test_unknown_metric(self) -> None:
        with pytest.raises(ValidationError, match="unknown metrics"):
            MetricRubricTrait(name="m", metrics=["auc"], tp_instructions=["a"])


class TestAgenticRubricTrait:
    def test_defaults(self) -> None:
        trait = AgenticRubricTrait(name="a", description="investigate")
        assert (trait.max_turns, trait.timeout_seconds) == (15, 120)
        assert trait.context_mode == "trace_and_workspace"

    def test_dotted_name_is_refused(self) -> None:
        with pytest.raises(ValidationError, match="must not contain"):
            AgenticRubricTrait(name="a.b", description="x")

    def test_materialized_trace_needs_the_trace(self) -> None:
        with pytest.raises(ValidationError, match="materialize_trace"):
            AgenticRubricTrait(
                name="a", description="x", materialize_trace=True, context_mode="workspace_only"
            )

    def test_description_is_required(self) -> None:
        with pytest.raises(ValidationError):
            AgenticRubricTrait(name="a")  # type: ignore[call-arg]


ALL_TRAITS = [
    LLMRubricTrait(name="l", kind="literal", classes={"a": "first", "b": "second"}),
    LLMRubricTrait(name="s", kind="score", min_score=0, max_score=10, deep_judgment_enabled=True),
    RegexTrait(name="r", pattern=r"\d+", invert_result=True),
    CallableTrait(name="c", callable_source="def f(t):\n    return True\n"),
    MetricRubricTrait(
        name="m",
        metrics=["precision", "accuracy"],
        evaluation_mode="full_matrix",
        tp_instructions=["x"],
        tn_instructions=["y"],
    ),
    AgenticRubricTrait(name="g", description="d", kind="score", max_turns=3),
]


@pytest.mark.parametrize("trait", ALL_TRAITS, ids=lambda t: t.trait_type)
def test_every_trait_survives_a_json_round_trip(trait: object) -> None:
    cls = type(trait)
    text = trait.model_dump_json()  # type: ignore[attr-defined]
    assert cls.model_validate_json(text) == trait  # type: ignore[attr-defined]
