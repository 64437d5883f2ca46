"""Stage 12: deep-judgment rubric traits must be backed by excerpts."""

from __future__ import annotations

from typing import ClassVar

from verifleet.schemas import VerificationConfig

from .._context import VerificationContext
from .._stage import Stage
from ._common import log

__all__ = ["DeepJudgmentRubricAutoFailStage"]


class DeepJudgmentRubricAutoFailStage(Stage):
    """Sets ``verify_result`` False when deep-judgment traits lack valid excerpts.
    Included with rubric evaluation; skipped after an abstention."""

    name: ClassVar[str] = "DeepJudgmentRubricAutoFail"

    def should_include(self, config: VerificationConfig, *, has_rubric: bool = False) -> bool:
        return config.rubric_stages_enabled and has_rubric

    def should_run(self, ctx: VerificationContext) -> bool:
        section = ctx.deep_judgment_rubric
        return (
            section is not None
            and section.deep_judgment_rubric_performed
            and bool(ctx.traits_without_valid_excerpts)
            and not ctx.abstention.detected
        )

    def run(self, ctx: VerificationContext) -> None:
        previous = ctx.verify_result
        ctx.verify_result = False
        log.warning(
            "%s override for question %s: verify_result %s -> False "
            "(traits without valid excerpts: %s)",
            self.name,
            ctx.question_id,
            previous,
            ", ".join(ctx.traits_without_valid_excerpts),
        )
