"""Stage 5: did the answering model refuse or evade?"""

from __future__ import annotations

from typing import ClassVar

from verifleet.schemas import VerificationConfig

from .._checks import detect_abstention
from .._context import VerificationContext
from .._stage import Stage
from ._common import check_input, fail_verification

__all__ = ["AbstentionCheckStage"]


class AbstentionCheckStage(Stage):
    """Asks the judge whether the response abstains; if so, ``verify_result`` is
    forced False and parsing, verification and the template checks are skipped.
    An agent's trace is judged by its final AI message (tool outputs excluded)
    unless ``use_full_trace_for_template``; a trace without one skips the check.
    Non-fatal: a failing check is logged and the pipeline goes on."""

    name: ClassVar[str] = "AbstentionCheck"
    fatal: ClassVar[bool] = False
    failure_label: ClassVar[str] = "abstention check failed"

    def should_include(self, config: VerificationConfig, *, has_rubric: bool = False) -> bool:
        return config.abstention_enabled

    def should_run(self, ctx: VerificationContext) -> bool:
        return not ctx.recursion_limit_reached

    def run(self, ctx: VerificationContext) -> None:
        text = check_input(ctx, check=self.name)
        if text is None:
            return
        outcome = detect_abstention(
            ctx.judge,
            question=ctx.question_text,
            response=text,
            instructions=ctx.prompts.abstention_detection,
        )
        record = ctx.abstention
        record.performed = True
        record.detected = outcome.detected
        record.reasoning = outcome.reasoning
        if outcome.detected:
            record.override_applied = True
            fail_verification(ctx, stage=self.name, reason="the response abstains")
