"""Stage 8: run the template's own verification (fields and regex)."""

from __future__ import annotations

from typing import ClassVar

from verifleet.schemas import VerificationConfig

from .._context import VerificationContext
from .._stage import Stage
from ._common import log

__all__ = ["VerifyTemplateStage"]


class VerifyTemplateStage(Stage):
    """``verify_result = verify() AND regex checks``; plus granular score, per-field
    results and the composition strategy.

    An exception from ``verify()`` is recorded in ``field_verification_error`` and
    counts as a failed field verification; it is not a pipeline error. Skipped
    when there is no parsed answer, after a recursion-limit hit or an abstention.
    """

    name: ClassVar[str] = "VerifyTemplate"
    failure_label: ClassVar[str] = "verification failed"

    def should_include(self, config: VerificationConfig, *, has_rubric: bool = False) -> bool:
        return config.template_stages_enabled

    def should_run(self, ctx: VerificationContext) -> bool:
        return (
            ctx.parsed_answer is not None
            and not ctx.recursion_limit_reached
            and not ctx.abstention.detected
        )

    def run(self, ctx: VerificationContext) -> None:
        answer = ctx.parsed_answer
        assert answer is not None  # guaranteed by should_run
        cls = type(answer)
        ctx.template_verification_performed = True
        ctx.composition_strategy = cls.composition_strategy()
        try:
            field_ok = bool(answer.verify())
        except Exception as exc:  # template code: any failure is the template's verdict
            field_ok = False
            ctx.field_verification_error = f"{type(exc).__name__}: {exc}"
            log.warning("question %s: verify() raised: %s", ctx.question_id, exc)
        try:
            ctx.field_results = answer.field_results()
        except Exception as exc:  # same containment as verify()
            log.warning("question %s: field_results() raised: %s", ctx.question_id, exc)
        regex = answer.verify_regex(ctx.raw_llm_response)
        ctx.regex = regex
        ctx.field_verification_result = field_ok
        ctx.verify_result = field_ok and regex.passed
        # A granular score next to a crashed verify() would contradict it.
        if ctx.field_verification_error is None and cls.defines_granular():
            try:
                ctx.verify_granular_result = answer.verify_granular()
            except Exception as exc:  # template code
                log.warning("question %s: verify_granular() raised: %s", ctx.question_id, exc)
