"""The compact summary of one result that the viewer keeps in memory.

A full result can be tens of KB (answer, trace, excerpts); the viewer keeps only
these few scalars per result, plus one row per rubric trait score, and loads the
full result from its source when a page asks for it.
"""

from __future__ import annotations

from collections.abc import Mapping

from verifleet.schemas import VerificationResult, numeric_trait_scores, result_trait_scores

__all__ = [
    "ANSWER_CHARS",
    "KEYWORD_SEP",
    "SUMMARY_FIELDS",
    "TRAIT_FIELDS",
    "answer_preview",
    "joined_keywords",
    "score_rows",
    "summary_row",
    "trait_rows",
    "verdict_of",
]

SUMMARY_FIELDS: tuple[str, ...] = (
    "row",
    "result_id",
    "question_id",
    "question_text",
    "keywords",
    "answering",
    "parsing",
    "replicate",
    "run_name",
    "completed",
    "error",
    "execution_time",
    "timestamp",
    "template",
    "verify_result",
    "verdict",
    "granular",
    "embedding",
    "embedding_score",
    "embedding_override",
    "regex",
    "regex_success",
    "abstention",
    "abstention_detected",
    "abstention_override",
    "sufficiency",
    "insufficient",
    "sufficiency_override",
    "recursion_limit",
    "rubric",
    "deep_judgment",
    "deep_judgment_rubric",
    "dj_auto_fails",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "answer",
)
"""Columns of the summary frame, in :func:`summary_row` order."""

ANSWER_CHARS = 300
"""How much of each answer the index keeps (the table shows it; the result page
shows it whole)."""


def answer_preview(text: str | None) -> str:
    """The start of an answer as the table shows it: one line, at most
    :data:`ANSWER_CHARS` characters, an ellipsis when cut; ``""`` for none."""
    if not text:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= ANSWER_CHARS else flat[: ANSWER_CHARS - 1] + "…"


TRAIT_FIELDS: tuple[str, ...] = ("row", "answering", "parsing", "trait", "trait_type", "score")
"""Columns of the trait frame: one row per scored rubric trait per result."""

# Keywords are kept as one string with a separator on both ends, so a keyword filter
# is a plain substring test over the column (fast in pandas, no list cells).
KEYWORD_SEP = "\x1f"


def joined_keywords(keywords: list[str] | None) -> str:
    """Keywords as the index keeps them: ``"\x1fk1\x1fk2\x1f"``, or ``""``."""
    return KEYWORD_SEP + KEYWORD_SEP.join(keywords) + KEYWORD_SEP if keywords else ""


def verdict_of(result: VerificationResult) -> str:
    """``error``, ``pass``, ``fail`` or ``none`` (no verdict), as the result store
    counts verdicts: an errored result is ``error`` whatever its template says."""
    if not result.metadata.completed_without_errors:
        return "error"
    template = result.template
    verdict = template.verify_result if template is not None else None
    return "pass" if verdict is True else "fail" if verdict is False else "none"


def _number(value: object) -> float | None:
    # bool is a verdict, not a score; NaN is no score.
    if isinstance(value, int | float) and not isinstance(value, bool) and value == value:
        return float(value)
    return None


def _tokens(usage: Mapping[str, object] | None, kind: str) -> int | None:
    total = (usage or {}).get("total")
    value = total.get(kind) if isinstance(total, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def summary_row(row: int, result: VerificationResult) -> tuple[object, ...]:
    """The :data:`SUMMARY_FIELDS` values of ``result`` found at position ``row``."""
    meta, t = result.metadata, result.template
    performed = t is not None and t.template_verification_performed
    dj, djr = result.deep_judgment, result.deep_judgment_rubric
    keywords = meta.keywords
    return (
        row,
        meta.result_id,
        meta.question_id,
        meta.question_text,
        joined_keywords(keywords),
        meta.answering_model,
        meta.parsing_model,
        meta.replicate,
        meta.run_name or "",
        meta.completed_without_errors,
        meta.error or "",
        meta.execution_time,
        meta.timestamp,
        performed,
        t.verify_result if performed and t is not None else None,
        verdict_of(result),
        _number(t.verify_granular_result) if t is not None else None,
        bool(t and t.embedding_check_performed),
        t.embedding_similarity_score if t is not None else None,
        bool(t and t.embedding_override_applied),
        bool(t and t.regex_validations_performed),
        t.regex_overall_success if t is not None else None,
        bool(t and t.abstention_check_performed),
        bool(t and t.abstention_detected),
        bool(t and t.abstention_override_applied),
        bool(t and t.sufficiency_check_performed),
        # sufficiency_detected=True means sufficient; the viewer counts the failures.
        bool(t and t.sufficiency_check_performed and t.sufficiency_detected is False),
        bool(t and t.sufficiency_override_applied),
        bool(t and t.recursion_limit_reached),
        bool(result.rubric and result.rubric.rubric_evaluation_performed),
        bool(dj and dj.deep_judgment_performed),
        bool(djr and djr.deep_judgment_rubric_performed),
        len(djr.traits_without_valid_excerpts or []) if djr is not None else 0,
        _tokens(t.usage_metadata if t else None, "input_tokens"),
        _tokens(t.usage_metadata if t else None, "output_tokens"),
        _tokens(t.usage_metadata if t else None, "total_tokens"),
        answer_preview(t.raw_llm_response if t is not None else None),
    )


def score_rows(
    row: int,
    answering: str,
    parsing: str,
    typed: dict[str, dict[str, object] | None],
    metrics: dict[str, dict[str, object]] | None,
) -> list[tuple[object, ...]]:
    """:data:`TRAIT_FIELDS` rows of one result's rubric scores.

    Args:
        row: The result's row.
        answering: Answering model display string.
        parsing: Parsing model display string.
        typed: Scores by trait type (``llm``, ``regex``, ``callable``, ``agentic``).
        metrics: Metric trait scores, ``{trait: {metric: value}}``.

    Booleans count as 0/1 and metric traits give one row per metric
    (``trait.metric``); literal-kind classes are indices, averaged like scores.
    Non-numeric values are left out.
    """
    return [
        (row, answering, parsing, name, kind, score)
        for name, kind, score in numeric_trait_scores(typed, metrics)
    ]


def trait_rows(row: int, result: VerificationResult) -> list[tuple[object, ...]]:
    """:data:`TRAIT_FIELDS` rows of every numeric rubric score of ``result`` (none
    when rubric evaluation did not run); see :func:`score_rows`."""
    meta = result.metadata
    return [
        (row, meta.answering_model, meta.parsing_model, name, kind, score)
        for name, kind, score in result_trait_scores(result.rubric)
    ]
