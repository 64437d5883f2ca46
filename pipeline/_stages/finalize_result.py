"""Stage 13: assemble the VerificationResult from the context. Always runs."""

from __future__ import annotations

from typing import ClassVar

from pydantic import ValidationError

from verifleet.schemas import (
    NO_TEMPLATE_ID,
    VerificationResult,
    VerificationResultDeepJudgment,
    VerificationResultMetadata,
    VerificationResultTemplate,
    bound_calls,
    classify_failure,
    collect_caveats,
    compute_fingerprint,
    compute_template_id,
)

from .._context import VerificationContext
from .._stage import Stage
from ._common import log

__all__ = ["FinalizeResultStage", "build_metadata"]


def build_metadata(ctx: VerificationContext, *, error: str | None) -> VerificationResultMetadata:
    """The metadata section; ``error`` set means ``completed_without_errors=False``."""
    answering = ctx.answering.identity(role="answering")
    parsing = ctx.parsing.identity(role="parsing")
    config = ctx.config
    source = ctx.question.answer_template if config.template_stages_enabled else None
    few_shot = config.few_shot_config
    return VerificationResultMetadata(
        question_id=ctx.question_id,
        template_id=compute_template_id(source) if source else NO_TEMPLATE_ID,
        result_id=VerificationResultMetadata.compute_result_id(
            ctx.question_id, answering, parsing, ctx.timestamp, ctx.replicate
        ),
        question_text=ctx.question_text,
        raw_answer=ctx.question.raw_answer,
        keywords=list(ctx.question.keywords) or None,
        run_name=config.run_name,
        replicate=ctx.replicate,
        answering=answering,
        parsing=parsing,
        answering_system_prompt=ctx.answering.system_prompt,
        parsing_system_prompt=ctx.parsing.system_prompt,
        completed_without_errors=error is None,
        error=error,
        execution_time=ctx.elapsed(),
        timestamp=ctx.timestamp,
        few_shot_enabled=bool(few_shot and few_shot.enabled),
        few_shot_example_count=ctx.answer.few_shot_example_count if ctx.answer else 0,
        evaluation_mode=config.evaluation_mode,
        fingerprint=compute_fingerprint(
            ctx.question,
            ctx.answering,
            ctx.parsing,
            config,
            rubric=ctx.rubric,
            dynamic_rubric=ctx.dynamic_rubric,
        ),
    )


def _template_section(ctx: VerificationContext) -> VerificationResultTemplate:
    answer = ctx.answer
    regex = ctx.regex
    return VerificationResultTemplate(
        raw_llm_response=ctx.raw_llm_response,
        trace_messages=[
            {**message, "block_index": index}
            for index, message in enumerate(answer.trace_messages if answer else [])
        ],
        parsed_llm_response=ctx.parsed_llm_response,
        parsed_gt_response=ctx.parsed_gt_response,
        template_verification_performed=ctx.template_verification_performed,
        verify_result=ctx.verify_result,
        verify_granular_result=ctx.verify_granular_result,
        field_verification_error=ctx.field_verification_error,
        template_validation_error=ctx.template_validation_error,
        field_results=dict(ctx.field_results) if ctx.field_results is not None else None,
        composition_strategy=ctx.composition_strategy,
        embedding_check_performed=ctx.embedding.performed,
        embedding_similarity_score=ctx.embedding.similarity,
        embedding_override_applied=ctx.embedding.override_applied,
        embedding_model_used=ctx.embedding.model_used,
        regex_validations_performed=regex.performed if regex else False,
        regex_validation_results=regex.results if regex and regex.performed else None,
        regex_validation_details=regex.details if regex and regex.performed else None,
        regex_overall_success=regex.overall_success if regex else None,
        regex_extraction_results=regex.extraction_results if regex and regex.performed else None,
        abstention_check_performed=ctx.abstention.performed,
        abstention_detected=ctx.abstention.detected,
        abstention_override_applied=ctx.abstention.override_applied,
        abstention_reasoning=ctx.abstention.reasoning,
        sufficiency_check_performed=ctx.sufficiency.performed,
        sufficiency_detected=ctx.sufficiency.detected,
        sufficiency_override_applied=ctx.sufficiency.override_applied,
        sufficiency_reasoning=ctx.sufficiency.reasoning,
        recursion_limit_reached=ctx.recursion_limit_reached,
        answering_mcp_servers=answer.answering_mcp_servers if answer else None,
        usage_metadata=ctx.usage.summary(),
        agent_metrics=ctx.usage.agent_metrics,
        model_calls=bound_calls(
            [*(answer.calls if answer else []), *ctx.usage.calls.calls()],
            ctx.resources.sandbox.settings.result_limits,
        ),
    )


def _has_template_section(ctx: VerificationContext) -> bool:
    """Template modes always have one; rubric_only has one only when the
    abstention check ran, to carry its verdict (the original framework builds the
    template section in every mode; without this the judge's answer was lost)."""
    return ctx.config.template_stages_enabled or ctx.abstention.performed


def _deep_judgment_section(ctx: VerificationContext) -> VerificationResultDeepJudgment | None:
    if not (ctx.config.deep_judgment_enabled and ctx.config.template_stages_enabled):
        return None
    mode = "full" if ctx.config.deep_judgment_excerpts_enabled else "reasoning_only"
    if ctx.deep_judgment is not None:
        return ctx.deep_judgment.model_copy(update={"deep_judgment_mode": mode})
    return VerificationResultDeepJudgment(
        deep_judgment_enabled=True,
        deep_judgment_mode=mode,
        deep_judgment_search_enabled=ctx.config.deep_judgment_search_enabled,
    )


class FinalizeResultStage(Stage):
    """Builds the result sections per evaluation mode (``template`` in template
    modes, and in rubric_only when the abstention check ran, holding its verdict
    with ``template_verification_performed=False``; ``rubric`` when rubric evaluation produced one, deep-judgment sections
    when enabled) and the metadata, with the error when one was set.

    Never skipped, even after a fatal error. Should the collected data not form a
    valid result (a bug), a minimal error result is built instead.
    """

    name: ClassVar[str] = "FinalizeResult"
    runs_after_error: ClassVar[bool] = True

    def run(self, ctx: VerificationContext) -> None:
        try:
            ctx.final_result = VerificationResult(
                metadata=build_metadata(ctx, error=ctx.error),
                template=_template_section(ctx) if _has_template_section(ctx) else None,
                rubric=ctx.rubric_result,
                deep_judgment=_deep_judgment_section(ctx),
                deep_judgment_rubric=ctx.deep_judgment_rubric,
                evaluation_input=ctx.evaluation_input,
                used_full_trace=ctx.used_full_trace,
                trace_extraction_error=ctx.trace_extraction_error,
            )
        except ValidationError as exc:
            message = f"result assembly failed: {exc.errors()[0]['msg'] if exc.errors() else exc}"
            log.error("question %s: %s", ctx.question_id, message)
            error = f"{ctx.error}; {message}" if ctx.error else message
            ctx.final_result = VerificationResult(metadata=build_metadata(ctx, error=error))
        # The original's verdict summary, from the sections just built.
        result = ctx.final_result
        result.metadata.failure = classify_failure(result)
        result.metadata.caveats = collect_caveats(result)
