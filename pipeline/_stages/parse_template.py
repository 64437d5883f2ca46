"""Stage 7: the judge fills the answer template from the response."""

from __future__ import annotations

from typing import ClassVar

from verifleet.sandbox import TemplateHandle
from verifleet.schemas import VerificationConfig, VerificationResultDeepJudgment

from .._checks import deep_judgment_parse
from .._context import VerificationContext
from .._prompts import build_parsing_messages
from .._stage import Stage, StageFailure
from ._common import evaluation_text

__all__ = ["ParseTemplateStage"]


class ParseTemplateStage(Stage):
    """Sends the response and the template's JSON schema to the judge, then has the
    sandbox validate the judge's output into the template and verify it in the
    same round trip (with deep judgment: excerpt-backed multi-step parsing). The
    verdict is applied by VerifyTemplate.

    Skipped after a recursion-limit hit, a failed trace validation, a detected
    abstention or an insufficient response. Fatal: an unparsable reply fails the
    result ("parsing failed: judge returned invalid JSON ...").
    """

    name: ClassVar[str] = "ParseTemplate"
    failure_label: ClassVar[str] = "parsing failed"

    def should_include(self, config: VerificationConfig, *, has_rubric: bool = False) -> bool:
        return config.template_stages_enabled

    def should_run(self, ctx: VerificationContext) -> bool:
        insufficient = ctx.sufficiency.performed and ctx.sufficiency.detected is False
        return (
            ctx.template is not None
            and not ctx.recursion_limit_reached
            and not ctx.trace_validation_failed
            and not ctx.abstention.detected
            and not insufficient
        )

    def run(self, ctx: VerificationContext) -> None:
        template = ctx.template
        assert template is not None  # guaranteed by should_run
        full = ctx.config.use_full_trace_for_template
        ctx.used_full_trace = full
        text = evaluation_text(ctx, full_trace=full)
        ctx.evaluation_input = text
        stored = _stored_parse(ctx)
        if not template.judge_fields:
            data: dict[str, object] = {}  # regex/trace-only template: nothing to ask
        elif stored is not None:
            data = stored
        elif ctx.config.deep_judgment_enabled:
            data = self._deep_judgment(ctx, text, template)
        else:
            schema = template.judge_schema()
            messages = build_parsing_messages(
                ctx.question_text,
                text,
                schema,
                system_prompt=ctx.parsing.system_prompt,
                instructions=ctx.prompts.parsing,
            )
            data = ctx.judge.invoke_json(
                messages, stage="parsing", schema=schema, schema_name=template.class_name
            )
        # Trace-verified fields are checked against the full response.
        evaluation = ctx.resources.sandbox.evaluate(template, data, ctx.raw_llm_response)
        if evaluation.invalid is not None:
            raise StageFailure(f"judge output does not fit the template: {evaluation.invalid}")
        ctx.parsed_answer = evaluation
        ctx.parsed_llm_response = evaluation.parsed
        ctx.parsed_gt_response = template.ground_truth()

    def _deep_judgment(
        self, ctx: VerificationContext, text: str, template: TemplateHandle
    ) -> dict[str, object]:
        # Recorded before the call so a failure still shows deep judgment was on.
        ctx.deep_judgment = VerificationResultDeepJudgment(
            deep_judgment_enabled=True,
            deep_judgment_search_enabled=ctx.config.deep_judgment_search_enabled,
        )
        outcome = deep_judgment_parse(
            ctx.judge,
            question=ctx.question_text,
            response=text,
            answer_cls=None,
            field_schema=template.judge_schema(),
            schema_name=template.class_name,
            config=ctx.config,
            instructions=ctx.prompts.deep_judgment,
            # The configured provider (Tavily or local BM25); a provider that
            # cannot be built fails the parse with its reason.
            search=ctx.resources.search_for(ctx.config)
            if ctx.config.deep_judgment_search_enabled
            else None,
        )
        ctx.deep_judgment = outcome.section
        return dict(outcome.parsed)


def _stored_parse(ctx: VerificationContext) -> dict[str, object] | None:
    """The judge's output of the result being re-verified, when the parse would
    be asked of the same judge (the caller matched its identity) with the same
    template, system prompt and evaluation input; None: ask the judge."""
    previous = ctx.previous
    if previous is None or previous.template is None or ctx.config.deep_judgment_enabled:
        return None
    parsed = previous.template.parsed_llm_response
    meta = previous.metadata
    if (
        parsed is None
        or meta.template_id != ctx.question.template_id
        or meta.parsing_system_prompt != ctx.parsing.system_prompt
        or previous.used_full_trace != ctx.config.use_full_trace_for_template
    ):
        return None
    return dict(parsed)
