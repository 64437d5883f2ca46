"""Helpers several stages share."""

from __future__ import annotations

import logging

from .._context import VerificationContext
from .._stage import StageFailure
from .._trace import TraceError, final_ai_message

__all__ = ["evaluation_text", "fail_verification", "log"]

log = logging.getLogger("verifleet.pipeline.stages")


def fail_verification(ctx: VerificationContext, *, stage: str, reason: str) -> None:
    """Override ``verify_result`` (and the field result) to False, logged at WARNING."""
    previous = ctx.verify_result
    ctx.verify_result = False
    ctx.field_verification_result = False
    log.warning(
        "%s override for question %s: verify_result %s -> False (%s)",
        stage,
        ctx.question_id,
        previous,
        reason,
    )


def evaluation_text(ctx: VerificationContext, *, full_trace: bool) -> str:
    """What parsing or rubric evaluation reads: the whole response/trace, or only
    the final AI message of a trace. Plain answers are the same either way.

    Raises:
        StageFailure: the final AI message cannot be extracted (also recorded as
            ``trace_extraction_error``).
    """
    answer = ctx.answer
    if full_trace or answer is None or not answer.trace_messages:
        return ctx.raw_llm_response
    try:
        return final_ai_message(answer.trace_messages)
    except TraceError as exc:
        ctx.trace_extraction_error = str(exc)
        raise StageFailure(f"cannot extract the final AI message: {exc}") from exc
