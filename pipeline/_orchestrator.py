"""Builds the stage list for a configuration and runs it over a context."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from verifleet.schemas import VerificationConfig, VerificationResult

from ._context import VerificationContext
from ._stage import Stage

__all__ = ["StageOrchestrator"]

_log = logging.getLogger(__name__)


class StageOrchestrator:
    """Runs stages in order with the spec's error containment.

    A stage whose :meth:`~Stage.should_run` is False is skipped. Once ``ctx.error``
    is set, only stages with ``runs_after_error`` (FinalizeResult) run. A stage
    that raises: fatal, ``ctx.error`` is set; non-fatal, a WARNING is logged.
    """

    def __init__(self, stages: Sequence[Stage]) -> None:
        self._stages = tuple(stages)

    @classmethod
    def for_config(cls, config: VerificationConfig, *, has_rubric: bool) -> StageOrchestrator:
        """The pipeline for ``config``: every stage whose ``should_include`` says so,
        in the spec's order (1 ValidateTemplate ... 13 FinalizeResult)."""
        from ._stages import all_stages

        return cls([s for s in all_stages() if s.should_include(config, has_rubric=has_rubric)])

    @property
    def stage_names(self) -> list[str]:
        """Names of the included stages, in order."""
        return [stage.name for stage in self._stages]

    def run(self, ctx: VerificationContext) -> VerificationResult:
        """Run every stage over ``ctx`` and return the result FinalizeResult built.

        Raises:
            RuntimeError: no stage produced a result (the stage list lacks
                FinalizeResult, or it failed): an infrastructure bug, not content.
        """
        for stage in self._stages:
            if ctx.error is not None and not stage.runs_after_error:
                _log.debug("%s skipped: earlier fatal error", stage.name)
                continue
            if not stage.should_run(ctx):
                _log.debug("%s skipped for question %s", stage.name, ctx.question_id)
                continue
            try:
                stage.run(ctx)
            except Exception as exc:
                message = stage.describe_failure(exc)
                if stage.fatal and not stage.runs_after_error:
                    ctx.error = message
                    _log.warning("question %s: %s", ctx.question_id, message)
                elif stage.runs_after_error:
                    raise
                else:
                    ctx.warnings.append(message)
                    _log.warning(
                        "question %s: %s (non-fatal, continuing)", ctx.question_id, message
                    )
        if ctx.final_result is None:
            raise RuntimeError(f"pipeline {self.stage_names} produced no result")
        return ctx.final_result
