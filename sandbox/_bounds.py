"""Host-side limits on what an executor's answer may put into results.

An executor answers with at most ``MAX_ANSWER_BYTES`` of JSON, but a template's
ground truth is copied into every result of its question and its verification
output into each one: the operator's :class:`~verifleet.schemas.ResultLimits`
decide what is kept. An answer beyond them fails its question with a message
naming the limit; nothing of the oversized part is held, so the host's memory
does not grow with the number of results.
"""

from __future__ import annotations

from typing import Any

from verifleet.schemas import ResultLimits

__all__ = ["MAX_ERROR_CHARS", "bounded_error", "description_problem", "evaluation_problem"]

#: Longest error text from an executor that is kept (the rest is cut, and said so).
MAX_ERROR_CHARS = 4096


def bounded_error(text: str) -> str:
    """``text`` cut to :data:`MAX_ERROR_CHARS` characters, saying how much was cut."""
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return f"{text[:MAX_ERROR_CHARS]}... ({len(text) - MAX_ERROR_CHARS} more characters cut)"


def description_problem(description: dict[str, Any], limits: ResultLimits) -> str | None:
    """Why a template's description may not be used (its ground truth or judge
    schema is over its limit), or None."""
    return limits.problem(
        "ground_truth", "the template's ground truth", description.get("ground_truth")
    ) or limits.problem(
        "judge_schema", "the template's judge schema", description.get("judge_schema")
    )


def evaluation_problem(result: dict[str, Any], limits: ResultLimits) -> str | None:
    """Why an ``evaluate`` answer may not be kept (parsed values or verification
    output over their limits), or None."""
    if result.get("invalid") is not None:
        return limits.problem(
            "verify_output", "the template's validation message", result.get("invalid")
        )
    return limits.problem(
        "parsed", "the judge's values as parsed by the template", result.get("parsed")
    ) or limits.problem(
        "verify_output", "the template's verification output", result.get("verification")
    )
