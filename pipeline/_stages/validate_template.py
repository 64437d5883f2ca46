"""Stage 1: compile and validate the answer template (in the sandbox)."""

from __future__ import annotations

from typing import ClassVar

from verifleet.schemas import VerificationConfig

from .._context import VerificationContext
from .._stage import Stage, StageFailure, describe_cause

__all__ = ["ValidateTemplateStage"]


class ValidateTemplateStage(Stage):
    """Has a sandbox executor compile and validate the template (cached by
    template id there, described once per (template, question) on the host) and
    keeps the description. Fatal: an invalid template, or one whose code crashes
    or hangs its executor, fails the result, and its cause is kept for
    ``template.template_validation_error``."""

    name: ClassVar[str] = "ValidateTemplate"
    failure_label: ClassVar[str] = "template validation failed"

    def should_include(self, config: VerificationConfig, *, has_rubric: bool = False) -> bool:
        return config.template_stages_enabled

    def run(self, ctx: VerificationContext) -> None:
        try:
            self._validate(ctx)
        except Exception as exc:
            # The spec's template.template_validation_error carries the cause.
            ctx.template_validation_error = describe_cause(exc)
            raise

    def _validate(self, ctx: VerificationContext) -> None:
        source = ctx.question.answer_template
        if not source or not source.strip():
            raise StageFailure(f"question {ctx.question_id} has no answer template")
        ctx.template = ctx.resources.sandbox.load_template(source, ctx.question_id)
