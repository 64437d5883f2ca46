"""Helpers several stages share."""

from __future__ import annotations

import logging

from .._context import VerificationContext
from .._stage import StageFailure
from .._trace import TraceError, final_ai_message

__all__ = ["check_input", "evaluation_text", "fail_verification", "log"]

log = logging.getLogger("verifleet.pipeline.stages")


def fail_verification(
    ctx: VerificationContext, *, stage: str, reason: str, auto_fail: bool = False
) -> None:
    """Override ``verify_result`` (and the field result) to False, logged at WARNING.

    ``auto_fail`` marks a verdict decided by an auto-fail stage (recursion limit,
    trace validation, deep judgment) rather than by a check: in template modes the
    template verification then counts as performed, as in the original framework,
    so ``get_template_summary()`` and the pass-rate tables count the failure.
    """
    previous = ctx.verify_result
    if auto_fail and ctx.config.template_stages_enabled:
        ctx.template_verification_performed = True
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


def check_input(ctx: VerificationContext, *, check: str) -> str | None:
    """What the abstention and sufficiency judges read: the response, or for a
    trace the final AI message unless ``use_full_trace_for_template`` (tool
    outputs are then left out, as in the original). None when the final AI
    message cannot be extracted: the check is skipped (logged), with no fallback
    to the full trace. Never raises."""
    answer = ctx.answer
    if ctx.config.use_full_trace_for_template or answer is None or not answer.trace_messages:
        return ctx.raw_llm_response
    try:
        return final_ai_message(answer.trace_messages)
    except TraceError as exc:
        log.warning("%s skipped for question %s: %s", check, ctx.question_id, exc)
        return None
