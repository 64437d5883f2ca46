"""Rubric section of a verification result: trait scores split by trait type."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "AgenticScore",
    "TraitType",
    "VerificationResultRubric",
    "numeric_trait_scores",
    "result_trait_scores",
]

TraitType = Literal["llm", "regex", "callable", "metric", "agentic"]

# A template-kind agentic trait records each field as "<trait>.<field>", any JSON value.
AgenticScore = bool | int | float | str | list[object] | None


class VerificationResultRubric(BaseModel):
    """Rubric evaluation outcome; present when rubric evaluation ran.

    Scores are keyed by trait name. LLM and agentic traits hold a bool (binary kind),
    an int (score kind) or a class index (literal kind; ``-1`` marks an invalid
    class, whose raw value is then kept in ``llm_trait_labels``).

    Raises:
        pydantic.ValidationError: on an unknown field name or a wrongly typed value.
    """

    model_config = ConfigDict(extra="forbid")

    rubric_evaluation_performed: bool = False
    rubric_evaluation_strategy: str | None = None

    llm_trait_scores: dict[str, bool | int] | None = None
    llm_trait_labels: dict[str, str] | None = None
    regex_trait_scores: dict[str, bool] | None = None
    callable_trait_scores: dict[str, bool | int | float] | None = None
    metric_trait_scores: dict[str, dict[str, float]] | None = None
    metric_trait_confusion_lists: dict[str, dict[str, list[str]]] | None = None

    agentic_trait_scores: dict[str, AgenticScore] | None = None
    agentic_trait_investigation_traces: dict[str, str] | None = None
    # How a template-kind trait's findings were found: {"method", "local_json_error",
    # "parser_error"} per trait, as the original records it
    agentic_trait_extraction_metadata: dict[str, dict[str, str | None]] | None = None

    # Dynamic rubrics: traits skipped (with the reason) or promoted by the presence check
    dynamic_rubric_skipped_traits: dict[str, str] | None = None
    dynamic_rubric_promoted_traits: list[str] | None = None
    # Where each trait came from: "global", "question_specific" or "dynamic"
    trait_provenance: dict[str, str] | None = None

    def _typed_scores(self) -> list[tuple[TraitType, Mapping[str, object] | None]]:
        # Lookup order; later types win in get_all_trait_scores on a name clash.
        return [
            ("llm", self.llm_trait_scores),
            ("regex", self.regex_trait_scores),
            ("callable", self.callable_trait_scores),
            ("metric", self.metric_trait_scores),
            ("agentic", self.agentic_trait_scores),
        ]

    def get_all_trait_scores(self) -> dict[str, object]:
        """All trait scores of every type in one flat dict.

        If two types share a trait name, the later type (llm < regex < callable <
        metric < agentic) wins; use the typed dicts to see both.

        Returns:
            ``{trait_name: value}``; metric traits map to their metrics dict. Empty
            when no trait was scored.
        """
        merged: dict[str, object] = {}
        for _, scores in self._typed_scores():
            if scores:
                merged.update(scores)
        return merged

    def get_trait_by_name(self, name: str) -> tuple[object, TraitType] | None:
        """Find a trait by name in llm, regex, callable, metric, agentic order.

        Returns:
            ``(value, trait_type)``, e.g. ``(4, "llm")``; None if no type has it.
        """
        for trait_type, scores in self._typed_scores():
            if scores and name in scores:
                return scores[name], trait_type
        return None

    def get_llm_trait_labels(self) -> dict[str, str]:
        """Class names of literal-kind LLM traits (an empty dict when none)."""
        return dict(self.llm_trait_labels or {})


def numeric_trait_scores(
    typed: Mapping[str, Mapping[str, object] | None],
    metrics: Mapping[str, Mapping[str, object]] | None,
) -> list[tuple[str, str, float]]:
    """(trait, kind, score) for every numeric rubric score of one result.

    Args:
        typed: Scores by trait kind (``llm``, ``regex``, ``callable``, ``agentic``).
        metrics: Metric trait scores, ``{trait: {metric: value}}``.

    Booleans count as 0/1 and metric traits give one score per metric
    (``trait.metric``, kind ``metric``); literal-kind classes are indices,
    averaged like scores. Non-numeric values and NaN are left out.
    """
    out: list[tuple[str, str, float]] = []

    def add(name: str, kind: str, value: object) -> None:
        if isinstance(value, bool) or (isinstance(value, int | float) and value == value):
            out.append((name, kind, float(value)))

    for kind, scores in typed.items():
        for name, value in (scores or {}).items():
            add(name, kind, value)
    for name, values in (metrics or {}).items():
        for metric, value in values.items():
            add(f"{name}.{metric}", "metric", value)
    return out


def result_trait_scores(rubric: VerificationResultRubric | None) -> list[tuple[str, str, float]]:
    """:func:`numeric_trait_scores` of a result's rubric (none when rubric
    evaluation did not run)."""
    if rubric is None or not rubric.rubric_evaluation_performed:
        return []
    typed: dict[str, Mapping[str, object] | None] = {
        "llm": rubric.llm_trait_scores,
        "regex": rubric.regex_trait_scores,
        "callable": rubric.callable_trait_scores,
        "agentic": rubric.agentic_trait_scores,
    }
    return numeric_trait_scores(typed, rubric.metric_trait_scores)
