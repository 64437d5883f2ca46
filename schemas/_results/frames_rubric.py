"""DataFrame of rubric results: one row per trait, metric traits one row per metric."""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, get_args

from .frames_common import (
    IDENTITY_COLUMNS,
    SCENARIO_COLUMNS,
    STATUS_COLUMNS,
    build_frame,
    result_columns,
)
from .result import VerificationResult
from .rubric import VerificationResultRubric

if typing.TYPE_CHECKING:
    import pandas as pd

__all__ = ["RUBRIC_COLUMNS", "RUBRIC_DEEP_JUDGMENT_COLUMNS", "RubricFrameType", "rubric_frame"]

RubricFrameType = Literal[
    "all", "llm", "llm_score", "llm_binary", "llm_literal", "regex", "callable", "metric", "agentic"
]

RUBRIC_COLUMNS: tuple[str, ...] = (
    *STATUS_COLUMNS,
    *IDENTITY_COLUMNS,
    *SCENARIO_COLUMNS,
    "answering_model", "parsing_model", "answering_system_prompt", "parsing_system_prompt",
    "rubric_evaluation_performed", "rubric_evaluation_strategy",
    "trait_name", "trait_score", "trait_label", "trait_type", "evaluation_method",
    "metric_name",
    "confusion_tp", "confusion_fp", "confusion_fn", "confusion_tn",
    "investigation_trace",
    "execution_time", "timestamp", "run_name",
    "trait_provenance",
    "result_index",
)  # fmt: skip

RUBRIC_DEEP_JUDGMENT_COLUMNS: tuple[str, ...] = (
    "trait_reasoning",
    "trait_excerpts",
    "trait_hallucination_risk",
)

# Which row kinds each requested trait_type admits.
_ADMITS: dict[str, frozenset[str]] = {
    "all": frozenset(
        {"llm_score", "llm_binary", "llm_literal", "regex", "callable", "metric", "agentic"}
    ),
    "llm": frozenset({"llm_score", "llm_binary", "llm_literal"}),
}


def _llm_kind(name: str, score: object, labels: dict[str, str]) -> str:
    if isinstance(score, bool):
        return "llm_binary"
    return "llm_literal" if name in labels else "llm_score"


def _trait_rows(rubric: VerificationResultRubric) -> Iterator[dict[str, Any]]:
    """Every trait (and every metric of a metric trait) as partial row dicts."""
    labels = rubric.get_llm_trait_labels()
    for name, score in (rubric.llm_trait_scores or {}).items():
        kind = _llm_kind(name, score, labels)
        label = labels.get(name) if kind == "llm_literal" else None
        yield {"trait_name": name, "trait_score": score, "trait_label": label,
               "trait_type": kind, "evaluation_method": "llm"}  # fmt: skip
    yield from _plain_rows("regex", rubric.regex_trait_scores)
    yield from _plain_rows("callable", rubric.callable_trait_scores)
    confusion = rubric.metric_trait_confusion_lists or {}
    for name, metrics in (rubric.metric_trait_scores or {}).items():
        lists = confusion.get(name) or {}
        for metric_name, value in metrics.items():
            yield {
                "trait_name": name,
                "trait_score": value,
                "trait_type": "metric",
                "evaluation_method": "metric",
                "metric_name": metric_name,
                "confusion_tp": lists.get("tp"),
                "confusion_fp": lists.get("fp"),
                "confusion_fn": lists.get("fn"),
                "confusion_tn": lists.get("tn"),
            }
    traces = rubric.agentic_trait_investigation_traces or {}
    for row in _plain_rows("agentic", rubric.agentic_trait_scores):
        yield {**row, "investigation_trace": traces.get(row["trait_name"])}


def _plain_rows(method: str, scores: Mapping[str, object] | None) -> Iterator[dict[str, Any]]:
    for name, score in (scores or {}).items():
        yield {"trait_name": name, "trait_score": score,
               "trait_type": method, "evaluation_method": method}  # fmt: skip


def _deep_judgment_columns(result: VerificationResult, trait: str) -> dict[str, object]:
    dj = result.deep_judgment_rubric
    if dj is None:
        return {"trait_reasoning": None, "trait_excerpts": "[]", "trait_hallucination_risk": None}
    return {
        "trait_reasoning": (dj.rubric_trait_reasoning or {}).get(trait),
        # JSON text keeps the column a flat string that survives CSV and Parquet.
        "trait_excerpts": json.dumps((dj.extracted_rubric_excerpts or {}).get(trait, [])),
        "trait_hallucination_risk": _overall_risk(
            (dj.rubric_hallucination_risk_assessment or {}).get(trait)
        ),
    }


def _overall_risk(assessment: object) -> object:
    # {"overall_risk", "per_excerpt_risks"}: the column holds the overall risk.
    return assessment.get("overall_risk") if isinstance(assessment, dict) else assessment


def rubric_frame(
    results: Sequence[VerificationResult],
    trait_type: RubricFrameType = "all",
    *,
    include_deep_judgment: bool = False,
) -> pd.DataFrame:
    """One row per trait per result, metric traits exploded one row per metric.

    ``trait_type`` keeps: ``all``; ``llm`` (all LLM kinds); ``llm_score``,
    ``llm_binary``, ``llm_literal``; ``regex``; ``callable``; ``metric``; ``agentic``.
    Literal traits carry their class index in ``trait_score`` and the class name in
    ``trait_label``. A result without an evaluated rubric yields one row with null
    trait columns, so every result stays countable. ``include_deep_judgment`` adds
    :data:`RUBRIC_DEEP_JUDGMENT_COLUMNS`. When a dynamic rubric ran, one
    ``<trait>_skipped`` column per dynamic trait follows, as in the original: True
    where its presence check skipped it, False where it was promoted, null where
    it did not apply.

    Raises:
        ValueError: ``trait_type`` is not one of the values above.
    """
    if trait_type not in get_args(RubricFrameType):
        raise ValueError(
            f"trait_type must be one of {get_args(RubricFrameType)}, not {trait_type!r}"
        )
    admitted = _ADMITS.get(trait_type, frozenset({trait_type}))
    columns = RUBRIC_COLUMNS + (RUBRIC_DEEP_JUDGMENT_COLUMNS if include_deep_judgment else ())
    rows: list[dict[str, object]] = []
    dynamic: set[str] = set()
    for index, result in enumerate(results):
        rubric = result.rubric
        base: dict[str, object] = {
            **result_columns(result, index),
            "rubric_evaluation_performed": rubric.rubric_evaluation_performed if rubric else None,
            "rubric_evaluation_strategy": rubric.rubric_evaluation_strategy if rubric else None,
        }
        if rubric is not None:
            status = _dynamic_status(rubric)
            dynamic.update(status)
            base.update({f"{name}_skipped": skipped for name, skipped in status.items()})
        if rubric is None or not rubric.rubric_evaluation_performed:
            rows.append(base)
            continue
        provenance = rubric.trait_provenance or {}
        for trait in _trait_rows(rubric):
            if trait["trait_type"] not in admitted:
                continue
            row = {**base, **trait, "trait_provenance": provenance.get(trait["trait_name"])}
            if include_deep_judgment and trait["evaluation_method"] == "llm":
                # Only LLM traits are judged deeply: other rows keep null columns.
                row.update(_deep_judgment_columns(result, trait["trait_name"]))
            rows.append(row)
    return build_frame(rows, (*columns, *(f"{name}_skipped" for name in sorted(dynamic))))


def _dynamic_status(rubric: VerificationResultRubric) -> dict[str, bool]:
    """Per dynamic trait: True when its presence check skipped it, False when promoted."""
    status = dict.fromkeys(rubric.dynamic_rubric_skipped_traits or {}, True)
    status.update(dict.fromkeys(rubric.dynamic_rubric_promoted_traits or [], False))
    return status
