"""Stage 3: fail the verification when the answering agent hit its turn limit."""

from __future__ import annotations

from typing import ClassVar

from .._context import VerificationContext
from .._stage import Stage
from ._common import fail_verification

__all__ = ["RecursionLimitAutoFailStage"]


class RecursionLimitAutoFailStage(Stage):
    """Sets ``verify_result`` False; the result still counts as completed without
    errors so the trace and tokens stay available for analysis."""

    name: ClassVar[str] = "RecursionLimitAutoFail"

    def should_run(self, ctx: VerificationContext) -> bool:
        return ctx.recursion_limit_reached

    def run(self, ctx: VerificationContext) -> None:
        fail_verification(
            ctx, stage=self.name, reason="agent reached its recursion limit", auto_fail=True
        )
