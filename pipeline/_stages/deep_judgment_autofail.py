"""Stage 10: every attribute the judge claims must be grounded in an excerpt."""

from __future__ import annotations

from typing import ClassVar

from verifleet.schemas import VerificationConfig

from .._context import VerificationContext
from .._stage import Stage
from ._common import fail_verification

__all__ = ["DeepJudgmentAutoFailStage"]


class DeepJudgmentAutoFailStage(Stage):
    """Fails the verification when deep judgment left attributes without excerpts."""

    name: ClassVar[str] = "DeepJudgmentAutoFail"

    def should_include(self, config: VerificationConfig, *, has_rubric: bool = False) -> bool:
        return config.deep_judgment_enabled and config.template_stages_enabled

    def should_run(self, ctx: VerificationContext) -> bool:
        section = ctx.deep_judgment
        return (
            section is not None
            and section.deep_judgment_performed
            and bool(section.attributes_without_excerpts)
            and not ctx.abstention.detected
        )

    def run(self, ctx: VerificationContext) -> None:
        assert ctx.deep_judgment is not None  # guaranteed by should_run
        missing = ", ".join(ctx.deep_judgment.attributes_without_excerpts or [])
        retries = ctx.deep_judgment.deep_judgment_excerpt_retry_count
        fail_verification(
            ctx,
            stage=self.name,
            reason=f"attributes without excerpts after {retries} retries: {missing}",
            auto_fail=True,
        )
