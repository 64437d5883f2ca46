"""DataFrames of template results: per parsed field, per regex pattern, per usage stage."""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import Any

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

__all__ = [
    "TEMPLATE_FIELD_COLUMNS",
    "TEMPLATE_REGEX_COLUMNS",
    "TEMPLATE_USAGE_COLUMNS",
    "template_field_frame",
    "template_regex_frame",
    "template_usage_frame",
]

TEMPLATE_FIELD_COLUMNS: tuple[str, ...] = (
    *STATUS_COLUMNS, "recursion_limit_reached",
    *IDENTITY_COLUMNS,
    "answering_mcp_servers",
    *SCENARIO_COLUMNS,
    "answering_model", "parsing_model", "answering_system_prompt", "parsing_system_prompt",
    "raw_llm_response",
    "field_name", "gt_value", "llm_value", "field_match", "field_score", "field_type",
    "verify_result", "verify_granular_result",
    "embedding_check_performed", "embedding_similarity_score", "embedding_model_used",
    "embedding_override_applied",
    "abstention_check_performed", "abstention_detected", "abstention_reasoning",
    "abstention_override_applied",
    "sufficiency_check_performed", "sufficiency_detected", "sufficiency_reasoning",
    "sufficiency_override_applied",
    "regex_validations_performed", "regex_overall_success",
    "execution_time", "timestamp", "run_name",
    "result_index",
)  # fmt: skip

TEMPLATE_REGEX_COLUMNS: tuple[str, ...] = (
    *STATUS_COLUMNS,
    "question_id", "template_id", "replicate",
    "answering_model", "parsing_model",
    "pattern_name", "pattern_regex", "matched", "extracted_value",
    "match_start", "match_end", "full_match",
    "raw_llm_response",
    "timestamp", "run_name",
    "result_index",
)  # fmt: skip

TEMPLATE_USAGE_COLUMNS: tuple[str, ...] = (
    *STATUS_COLUMNS,
    "question_id", "template_id", "replicate",
    "answering_model", "parsing_model",
    "usage_stage",
    "input_tokens", "output_tokens", "total_tokens",
    "model_used",
    "input_audio_tokens", "input_cache_read_tokens", "output_audio_tokens",
    "output_reasoning_tokens",
    "agent_iterations", "agent_tool_calls", "agent_tools_used", "agent_suspected_failures",
    "timestamp", "run_name",
    "result_index",
)  # fmt: skip


def _values_equal(left: object, right: object) -> bool:
    try:
        return bool(left == right)
    except (TypeError, ValueError):  # e.g. arrays whose == is elementwise
        return False


def _field_pairs(
    result: VerificationResult,
) -> list[tuple[str | None, object, object, bool | None]]:
    """``(field, gt, llm, match)`` per field of either parsed response, sorted by name."""
    template = result.template
    if template is None:
        return [(None, None, None, None)]
    gt = template.parsed_gt_response or {}
    llm = template.parsed_llm_response or {}
    names = sorted(set(gt) | set(llm))
    if not names:
        return [(None, None, None, None)]
    stored = template.field_results or {}
    pairs: list[tuple[str | None, object, object, bool | None]] = []
    for name in names:
        if name in stored:
            # The template's own per-field verdict beats a naive equality check.
            match = stored[name]
        elif (name in gt) != (name in llm):
            match = False
        else:
            match = _values_equal(gt.get(name), llm.get(name))
        pairs.append((name, gt.get(name), llm.get(name), match))
    return pairs


def _type_name(gt_value: object, llm_value: object) -> str | None:
    for value in (gt_value, llm_value):
        if value is not None:
            return type(value).__name__
    return None


def template_field_frame(results: Sequence[VerificationResult]) -> pd.DataFrame:
    """One row per parsed field per result (:data:`TEMPLATE_FIELD_COLUMNS`).

    A result without a template section, or with no parsed fields, still gets one
    row whose field columns are null, so every result appears; ``result_index`` is
    its position in ``results``.
    """
    rows: list[dict[str, object]] = []
    for index, result in enumerate(results):
        template = result.template
        base: dict[str, object] = {
            **result_columns(result, index),
            "recursion_limit_reached": template.recursion_limit_reached if template else False,
            "answering_mcp_servers": template.answering_mcp_servers if template else None,
            "raw_llm_response": template.raw_llm_response if template else None,
            "verify_result": template.verify_result if template else None,
            "verify_granular_result": template.verify_granular_result if template else None,
            "sufficiency_check_performed": bool(template and template.sufficiency_check_performed),
            "sufficiency_detected": template.sufficiency_detected if template else None,
            "sufficiency_reasoning": template.sufficiency_reasoning if template else None,
            "sufficiency_override_applied": bool(
                template and template.sufficiency_override_applied
            ),
            "embedding_check_performed": bool(template and template.embedding_check_performed),
            "embedding_similarity_score": template.embedding_similarity_score if template else None,
            "embedding_model_used": template.embedding_model_used if template else None,
            "embedding_override_applied": bool(template and template.embedding_override_applied),
            "abstention_check_performed": bool(template and template.abstention_check_performed),
            "abstention_detected": template.abstention_detected if template else None,
            "abstention_reasoning": template.abstention_reasoning if template else None,
            "abstention_override_applied": bool(template and template.abstention_override_applied),
            "regex_validations_performed": bool(template and template.regex_validations_performed),
            "regex_overall_success": template.regex_overall_success if template else None,
        }
        scores = (template.field_scores if template else None) or {}
        for name, gt_value, llm_value, match in _field_pairs(result):
            rows.append(
                {
                    **base,
                    "field_name": name,
                    "gt_value": gt_value,
                    "llm_value": llm_value,
                    "field_match": match,
                    # None when not recorded (verifleet does not record it yet).
                    "field_score": scores.get(name) if name is not None else None,
                    "field_type": _type_name(gt_value, llm_value),
                }
            )
    return build_frame(rows, TEMPLATE_FIELD_COLUMNS)


def template_regex_frame(results: Sequence[VerificationResult]) -> pd.DataFrame:
    """One row per regex pattern per result that ran regex validations.

    ``pattern_regex`` and the match positions come from ``regex_validation_details``
    (keys ``pattern``/``regex``, ``match_start``, ``match_end``, ``full_match``).
    """
    rows: list[dict[str, object]] = []
    for index, result in enumerate(results):
        template = result.template
        if template is None or not template.regex_validations_performed:
            continue
        details = template.regex_validation_details or {}
        extracted = template.regex_extraction_results or {}
        for pattern_name, matched in (template.regex_validation_results or {}).items():
            detail = details.get(pattern_name, {})
            rows.append(
                {
                    **result_columns(result, index),
                    "pattern_name": pattern_name,
                    "pattern_regex": detail.get("pattern", detail.get("regex")),
                    "matched": matched,
                    "extracted_value": extracted.get(pattern_name),
                    "match_start": detail.get("match_start"),
                    "match_end": detail.get("match_end"),
                    "full_match": detail.get("full_match"),
                    "raw_llm_response": template.raw_llm_response,
                }
            )
    return build_frame(rows, TEMPLATE_REGEX_COLUMNS)


def template_usage_frame(
    results: Sequence[VerificationResult], *, totals_only: bool = False
) -> pd.DataFrame:
    """Token usage: one row per stage per result, or one ``total`` row per result.

    Stages come from ``usage_metadata``; the ``total`` entry is excluded from the
    per-stage frame and is the only row with ``totals_only`` (then ``usage_stage`` is
    None, as in the original). Agent metrics fill the ``answer_generation`` row only (null
    elsewhere, as in the original).
    """
    rows: list[dict[str, object]] = []
    for index, result in enumerate(results):
        template = result.template
        if template is None or not template.usage_metadata:
            continue
        metrics = template.agent_metrics or {}
        for stage, usage in template.usage_metadata.items():
            if (stage == "total") != totals_only:
                continue
            # The agent's metrics belong to answer generation, as in the original.
            agent = metrics if stage == "answer_generation" else {}
            # Provider-shaped detail dicts, read as recorded.
            input_details: Any = usage.get("input_token_details") or {}
            output_details: Any = usage.get("output_token_details") or {}
            rows.append(
                {
                    **result_columns(result, index),
                    # None on a totals row, as in the original.
                    "usage_stage": None if totals_only else stage,
                    "input_tokens": usage.get("input_tokens"),
                    "output_tokens": usage.get("output_tokens"),
                    "total_tokens": usage.get("total_tokens"),
                    "model_used": usage.get("model"),
                    "input_audio_tokens": input_details.get("audio"),
                    "input_cache_read_tokens": input_details.get("cache_read"),
                    "output_audio_tokens": output_details.get("audio"),
                    "output_reasoning_tokens": output_details.get("reasoning"),
                    "agent_iterations": agent.get("iterations"),
                    "agent_tool_calls": agent.get("tool_calls"),
                    "agent_tools_used": agent.get("tools_used"),
                    "agent_suspected_failures": agent.get("suspect_failed_tool_calls"),
                }
            )
    return build_frame(rows, TEMPLATE_USAGE_COLUMNS)
