"""Stage 8: run the template's own verification (fields and regex)."""

from __future__ import annotations

from typing import ClassVar

from verifleet.schemas import VerificationConfig

from .._context import VerificationContext
from .._stage import Stage, StageFailure
from ._common import log

__all__ = ["VerifyTemplateStage"]


class VerifyTemplateStage(Stage):
    """``verify_result = verify() AND regex checks``; plus granular score, per-field
    results and the composition strategy. The template's code ran in the sandbox
    during ParseTemplate (one round trip); this stage records its verdict.

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
        evaluation = ctx.parsed_answer
        assert evaluation is not None  # guaranteed by should_run
        verdict = evaluation.verification
        assert verdict is not None  # a parsed answer always carries its verdict
        ctx.template_verification_performed = True
        ctx.composition_strategy = verdict.composition_strategy
        if verdict.error is not None:
            ctx.field_verification_error = verdict.error
            log.warning("question %s: verify() raised: %s", ctx.question_id, verdict.error)
        if verdict.field_results_error is not None:
            log.warning(
                "question %s: field_results() raised: %s",
                ctx.question_id,
                verdict.field_results_error,
            )
        else:
            ctx.field_results = verdict.field_results
        if verdict.regex is None:
            raise StageFailure(verdict.regex_error or "the template's regex checks failed")
        ctx.regex = verdict.regex
        ctx.field_verification_result = verdict.field_ok
        ctx.verify_result = verdict.verify_result
        if verdict.granular_error is not None:
            log.warning(
                "question %s: verify_granular() raised: %s", ctx.question_id, verdict.granular_error
            )
        else:
            ctx.verify_granular_result = verdict.granular
