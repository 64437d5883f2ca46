"""Stage 1: compile and validate the answer template."""

from __future__ import annotations

from typing import ClassVar

from verifleet.schemas import VerificationConfig

from .._context import VerificationContext
from .._stage import Stage, StageFailure, describe_cause

__all__ = ["ValidateTemplateStage"]


class ValidateTemplateStage(Stage):
    """Compiles the template once per process (cached by template id) and binds
    the question id. Fatal: an invalid template fails the result, and its cause
    is kept for ``template.template_validation_error``."""

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
        templates = ctx.resources.templates
        ctx.raw_answer_cls = templates.raw_class(source, question_id=ctx.question_id)
        ctx.answer_cls = templates.load(source, ctx.question_id)
