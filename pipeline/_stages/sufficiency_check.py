"""Stage 6: does the response hold enough to fill the template?"""

from __future__ import annotations

from typing import ClassVar

from verifleet.schemas import VerificationConfig

from .._checks import detect_sufficiency
from .._context import VerificationContext
from .._stage import Stage
from ._common import check_input, fail_verification

__all__ = ["SufficiencyCheckStage"]


class SufficiencyCheckStage(Stage):
    """Asks the judge whether the response can fill the template's schema; if not,
    ``verify_result`` is forced False and parsing is skipped. Template modes
    only. Reads what the abstention check reads (final AI message of a trace
    unless ``use_full_trace_for_template``). Non-fatal."""

    name: ClassVar[str] = "SufficiencyCheck"
    fatal: ClassVar[bool] = False
    failure_label: ClassVar[str] = "sufficiency check failed"

    def should_include(self, config: VerificationConfig, *, has_rubric: bool = False) -> bool:
        return config.sufficiency_enabled and config.template_stages_enabled

    def should_run(self, ctx: VerificationContext) -> bool:
        return (
            ctx.template is not None
            and not ctx.recursion_limit_reached
            and not ctx.trace_validation_failed
            and not ctx.abstention.detected
        )

    def run(self, ctx: VerificationContext) -> None:
        assert ctx.template is not None  # guaranteed by should_run
        text = check_input(ctx, check=self.name)
        if text is None:
            return
        outcome = detect_sufficiency(
            ctx.judge,
            question=ctx.question_text,
            response=text,
            schema=ctx.template.judge_schema(),
            instructions=ctx.prompts.sufficiency_detection,
        )
        record = ctx.sufficiency
        record.performed = True
        record.detected = outcome.detected
        record.reasoning = outcome.reasoning
        if not outcome.detected:
            record.override_applied = True
            fail_verification(ctx, stage=self.name, reason="the response is insufficient")
