"""Stage 11: score the response against the rubric's traits."""

from __future__ import annotations

from typing import Any, ClassVar

from verifleet.schemas import VerificationConfig, VerificationResultRubric

from .._context import VerificationContext
from .._rubric_eval import evaluate_rubric
from .._rubric_eval.deterministic import CallableRunner, RegexRunner
from .._stage import Stage
from ._common import evaluation_text
from ._investigate import TraitInvestigator

__all__ = ["RubricEvaluationStage"]


class RubricEvaluationStage(Stage):
    """Evaluates LLM, regex, callable, metric and agentic traits (and dynamic ones)
    on the full trace or the final AI message (agentic traits: an investigating
    agent, see :class:`~._investigate.TraitInvestigator`). Independent of template verification:
    it runs after an abstention too. Skipped when trace validation failed and
    only the final AI message may be used. Non-fatal: on failure the rubric
    section stays empty and a WARNING is logged."""

    name: ClassVar[str] = "RubricEvaluation"
    fatal: ClassVar[bool] = False
    failure_label: ClassVar[str] = "rubric evaluation failed"

    def should_include(self, config: VerificationConfig, *, has_rubric: bool = False) -> bool:
        return config.rubric_stages_enabled and has_rubric

    def should_run(self, ctx: VerificationContext) -> bool:
        return not (ctx.trace_validation_failed and not ctx.config.use_full_trace_for_rubric)

    def run(self, ctx: VerificationContext) -> None:
        full = ctx.config.use_full_trace_for_rubric
        text = evaluation_text(ctx, full_trace=full)
        if ctx.evaluation_input is None:
            # Template parsing did not record its input (rubric_only, or skipped).
            ctx.evaluation_input = text
            ctx.used_full_trace = full
        outcome = evaluate_rubric(
            ctx.judge,
            question=ctx.question_text,
            response=text,
            rubric=ctx.rubric,
            config=ctx.config,
            question_id=ctx.question_id,
            dynamic_rubric=ctx.dynamic_rubric,
            search=lambda: ctx.resources.search_for(ctx.config, rubric=True),
            investigate=TraitInvestigator(ctx),
            run_callable=_sandbox_runner(ctx),
            run_regex=_sandbox_regex_runner(ctx),
        )
        ctx.rubric_result = outcome.rubric
        if outcome.rubric is not None:
            outcome.rubric.trait_provenance = _provenance(ctx, outcome.rubric)
        ctx.deep_judgment_rubric = outcome.deep_judgment_rubric
        ctx.traits_without_valid_excerpts = outcome.traits_without_valid_excerpts


def _provenance(ctx: VerificationContext, rubric: VerificationResultRubric) -> dict[str, str]:
    """Where each trait came from, as the original records it: the question's own
    rubric, the global one, or a dynamic rubric whose presence check promoted it."""
    own = ctx.question.question_rubric
    own_names = set(own.get_trait_names()) if own is not None else set()
    found = {
        name: "question_specific" if name in own_names else "global"
        for name in (ctx.rubric.get_trait_names() if ctx.rubric is not None else [])
    }
    found.update(dict.fromkeys(rubric.dynamic_rubric_promoted_traits or [], "dynamic"))
    return found


def _sandbox_runner(ctx: VerificationContext) -> CallableRunner:
    """Runs callable traits in the sandbox: only the trait's JSON form (source,
    or a pickled blob with its ``trusted`` flag) crosses; unpickling and running
    happen in an executor."""
    pool = ctx.resources.sandbox

    def run(trait: Any, text: str) -> Any:
        return pool.run_trait(trait.model_dump(mode="json"), text)

    return run


def _sandbox_regex_runner(ctx: VerificationContext) -> RegexRunner:
    """Runs regex traits in the sandbox: a benchmark's pattern can backtrack for
    ever, which would otherwise hold a worker thread past any deadline."""
    pool = ctx.resources.sandbox

    def run(trait: Any, text: str) -> bool:
        return pool.run_regex_trait(trait.model_dump(mode="json"), text)

    return run
