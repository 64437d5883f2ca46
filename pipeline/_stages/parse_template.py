"""Stage 7: the judge fills the answer template from the response."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ValidationError

from verifleet.schemas import (
    BaseAnswer,
    VerificationConfig,
    VerificationResultDeepJudgment,
    build_answer,
    judge_field_names,
    judge_json_schema,
    parsed_ground_truth,
    parsed_llm_fields,
)

from .._checks import deep_judgment_parse
from .._context import VerificationContext
from .._prompts import build_parsing_messages
from .._stage import Stage, StageFailure
from ._common import evaluation_text

__all__ = ["ParseTemplateStage"]


def _first_errors(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "answer"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


class ParseTemplateStage(Stage):
    """Sends the response and the template's JSON schema to the judge and builds
    the answer object (with deep judgment: excerpt-backed multi-step parsing).

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
            ctx.answer_cls is not None
            and not ctx.recursion_limit_reached
            and not ctx.trace_validation_failed
            and not ctx.abstention.detected
            and not insufficient
        )

    def run(self, ctx: VerificationContext) -> None:
        cls, raw_cls = ctx.answer_cls, ctx.raw_answer_cls or ctx.answer_cls
        assert cls is not None and raw_cls is not None  # guaranteed by should_run
        full = ctx.config.use_full_trace_for_template
        ctx.used_full_trace = full
        text = evaluation_text(ctx, full_trace=full)
        ctx.evaluation_input = text
        if not judge_field_names(cls):
            data: dict[str, Any] = {}  # regex/trace-only template: nothing to ask
        elif ctx.config.deep_judgment_enabled:
            data = self._deep_judgment(ctx, text, raw_cls)
        else:
            schema = judge_json_schema(raw_cls)
            messages = build_parsing_messages(
                ctx.question_text,
                text,
                schema,
                system_prompt=ctx.parsing.system_prompt,
                instructions=ctx.prompts.parsing,
            )
            data = ctx.judge.invoke_json(
                messages, stage="parsing", schema=schema, schema_name=raw_cls.__name__
            )
        try:
            answer = build_answer(cls, data)
        except ValidationError as exc:
            raise StageFailure(
                f"judge output does not fit the template: {_first_errors(exc)}"
            ) from exc
        # Trace-verified fields are checked against the full response.
        answer.set_raw_trace(ctx.raw_llm_response)
        ctx.parsed_answer = answer
        ctx.parsed_llm_response = parsed_llm_fields(answer)
        ctx.parsed_gt_response = parsed_ground_truth(cls)

    def _deep_judgment(
        self, ctx: VerificationContext, text: str, raw_cls: type[BaseAnswer]
    ) -> dict[str, Any]:
        # Recorded before the call so a failure still shows deep judgment was on.
        ctx.deep_judgment = VerificationResultDeepJudgment(
            deep_judgment_enabled=True,
            deep_judgment_search_enabled=ctx.config.deep_judgment_search_enabled,
        )
        outcome = deep_judgment_parse(
            ctx.judge,
            question=ctx.question_text,
            response=text,
            answer_cls=raw_cls,
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
