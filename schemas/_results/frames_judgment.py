"""DataFrames of deep-judgment results, exploded to one row per excerpt."""

from __future__ import annotations

import json
import typing
from collections.abc import Sequence

from .frames_common import (
    IDENTITY_COLUMNS,
    SCENARIO_COLUMNS,
    STATUS_COLUMNS,
    build_frame,
    result_columns,
)
from .result import VerificationResult

if typing.TYPE_CHECKING:
    import pandas as pd

__all__ = ["JUDGMENT_COLUMNS", "RUBRIC_JUDGMENT_COLUMNS", "judgment_frame", "rubric_judgment_frame"]

_EXCERPT = (
    "excerpt_index", "excerpt_text", "excerpt_confidence", "excerpt_similarity_score",
    "excerpt_search_results", "excerpt_hallucination_risk", "excerpt_hallucination_justification",
)  # fmt: skip

JUDGMENT_COLUMNS: tuple[str, ...] = (
    *STATUS_COLUMNS, "recursion_limit_reached",
    *IDENTITY_COLUMNS,
    "answering_mcp_servers",
    *SCENARIO_COLUMNS,
    "answering_model", "parsing_model", "answering_system_prompt", "parsing_system_prompt",
    "raw_llm_response", "parsed_gt_response", "parsed_llm_response",
    "deep_judgment_mode",
    "deep_judgment_enabled", "deep_judgment_performed", "deep_judgment_search_enabled",
    "attribute_name", "gt_attribute_value", "llm_attribute_value", "attribute_match",
    *_EXCERPT,
    "attribute_reasoning", "attribute_overall_risk", "attribute_has_excerpts",
    "deep_judgment_model_calls", "deep_judgment_excerpt_retries", "stages_completed",
    "execution_time", "timestamp", "run_name", "result_index",
)  # fmt: skip

RUBRIC_JUDGMENT_COLUMNS: tuple[str, ...] = (
    *STATUS_COLUMNS,
    *IDENTITY_COLUMNS,
    "answering_model", "parsing_model", "answering_system_prompt", "parsing_system_prompt",
    "trait_name", "trait_score", "trait_type", "trait_reasoning",
    *_EXCERPT,
    "trait_overall_risk", "trait_has_excerpts", "trait_had_excerpts",
    "trait_model_calls", "trait_excerpt_retries",
    "trait_stages_completed", "trait_validation_failed",
    "execution_time", "timestamp", "run_name", "result_index",
)  # fmt: skip


def _excerpt_columns(index: int | None, excerpt: dict[str, object] | None) -> dict[str, object]:
    data = excerpt or {}
    return {
        "excerpt_index": index,
        "excerpt_text": data.get("text"),
        "excerpt_confidence": data.get("confidence"),
        "excerpt_similarity_score": data.get("similarity_score"),
        "excerpt_search_results": data.get("search_results"),
        "excerpt_hallucination_risk": data.get("hallucination_risk"),
        "excerpt_hallucination_justification": data.get("hallucination_justification"),
    }


def _explode(
    excerpts: list[dict[str, object]],
) -> list[tuple[int | None, dict[str, object] | None]]:
    # An item without excerpts still gets one row so its reasoning is not lost.
    if not excerpts:
        return [(None, None)]
    return [(position, excerpt) for position, excerpt in enumerate(excerpts)]


def judgment_frame(results: Sequence[VerificationResult]) -> pd.DataFrame:
    """One row per excerpt per attribute of template deep judgment.

    Attributes come from ``extracted_excerpts`` (or, when absent, from
    ``hallucination_risk_assessment``); an attribute with no excerpt gets one row with
    null excerpt columns. A result without performed deep judgment gets a single row
    with null attribute columns.
    """
    rows: list[dict[str, object]] = []
    for index, result in enumerate(results):
        dj, template = result.deep_judgment, result.template
        base = {
            **result_columns(result, index),
            "recursion_limit_reached": template.recursion_limit_reached if template else None,
            "answering_mcp_servers": template.answering_mcp_servers if template else None,
            "raw_llm_response": template.raw_llm_response if template else None,
            "parsed_gt_response": template.parsed_gt_response if template else None,
            "parsed_llm_response": template.parsed_llm_response if template else None,
            "deep_judgment_mode": dj.deep_judgment_mode if dj else None,
            "deep_judgment_enabled": bool(dj and dj.deep_judgment_enabled),
            "deep_judgment_performed": bool(dj and dj.deep_judgment_performed),
            "deep_judgment_search_enabled": bool(dj and dj.deep_judgment_search_enabled),
            "deep_judgment_model_calls": dj.deep_judgment_model_calls if dj else 0,
            "deep_judgment_excerpt_retries": dj.deep_judgment_excerpt_retry_count if dj else 0,
            "stages_completed": dj.deep_judgment_stages_completed if dj else None,
            "attribute_has_excerpts": False,
        }
        if dj is None or not dj.deep_judgment_performed:
            rows.append(base)
            continue
        risks = dj.hallucination_risk_assessment or {}
        reasoning = dj.attribute_reasoning or {}
        excerpts = dj.extracted_excerpts or {name: [] for name in risks}
        gt = (template.parsed_gt_response if template else None) or {}
        llm = (template.parsed_llm_response if template else None) or {}
        if not excerpts:
            rows.append(base)
        for attribute, found in excerpts.items():
            gt_value, llm_value = gt.get(attribute), llm.get(attribute)
            attribute_cols = {
                "attribute_name": attribute,
                "gt_attribute_value": gt_value,
                "llm_attribute_value": llm_value,
                "attribute_match": (
                    None if gt_value is None and llm_value is None else gt_value == llm_value
                ),
                "attribute_reasoning": reasoning.get(attribute),
                "attribute_overall_risk": risks.get(attribute),
                "attribute_has_excerpts": bool(found),
            }
            for position, excerpt in _explode(found):
                rows.append({**base, **attribute_cols, **_excerpt_columns(position, excerpt)})
    return build_frame(rows, JUDGMENT_COLUMNS)


def rubric_judgment_frame(results: Sequence[VerificationResult]) -> pd.DataFrame:
    """One row per excerpt per trait evaluated with rubric deep judgment.

    Traits are those with a deep-judgment score, reasoning or excerpts; a trait with
    no excerpt gets one row with null excerpt columns. Results without performed
    rubric deep judgment contribute no rows.
    """
    rows: list[dict[str, object]] = []
    for index, result in enumerate(results):
        dj = result.deep_judgment_rubric
        if dj is None or not dj.deep_judgment_rubric_performed:
            continue
        scores = dj.deep_judgment_rubric_scores or {}
        reasoning = dj.rubric_trait_reasoning or {}
        excerpts = dj.extracted_rubric_excerpts or {}
        risks = dj.rubric_hallucination_risk_assessment or {}
        meta = dj.trait_metadata or {}
        failed = set(dj.traits_without_valid_excerpts or [])
        base = result_columns(result, index)
        for trait in dict.fromkeys([*scores, *reasoning, *excerpts]):
            info = meta.get(trait, {})
            found = excerpts.get(trait, [])
            trait_cols = {
                "trait_name": trait,
                "trait_score": scores.get(trait),
                "trait_type": (
                    None
                    if trait not in scores
                    else "llm_binary"
                    if isinstance(scores[trait], bool)
                    else "llm_score"
                ),
                "trait_reasoning": reasoning.get(trait),
                "trait_overall_risk": (risks.get(trait) or {}).get("overall_risk"),
                "trait_has_excerpts": bool(found),
                # The original's name: what its trait_metadata says ("had_excerpts").
                "trait_had_excerpts": info.get("had_excerpts", bool(found)),
                "trait_model_calls": info.get("model_calls"),
                "trait_excerpt_retries": info.get("excerpt_retry_count"),
                # JSON text, as the original writes it.
                "trait_stages_completed": json.dumps(info.get("stages_completed", [])),
                "trait_validation_failed": trait in failed
                or bool(info.get("excerpt_validation_failed")),
            }
            for position, excerpt in _explode(found):
                rows.append({**base, **trait_cols, **_excerpt_columns(position, excerpt)})
    return build_frame(rows, RUBRIC_JUDGMENT_COLUMNS)
