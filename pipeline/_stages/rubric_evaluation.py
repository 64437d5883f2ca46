"""Stage 11: score the response against the rubric's traits."""

from __future__ import annotations

from typing import Any, ClassVar

from verifleet.schemas import Rubric, VerificationConfig, VerificationResultRubric

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
        rubric, stored = _reuse_stored_scores(ctx)
        outcome = evaluate_rubric(
            ctx.judge,
            question=ctx.question_text,
            response=text,
            rubric=rubric,
            config=ctx.config,
            question_id=ctx.question_id,
            dynamic_rubric=ctx.dynamic_rubric,
            search=lambda: ctx.resources.search_for(ctx.config, rubric=True),
            investigate=TraitInvestigator(ctx),
            run_callable=_sandbox_runner(ctx),
            run_regex=_sandbox_regex_runner(ctx),
        )
        ctx.rubric_result = _with_stored(outcome.rubric, stored)
        if ctx.rubric_result is not None:
            ctx.rubric_result.trait_provenance = _provenance(ctx, ctx.rubric_result)
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


def _reuse_stored_scores(
    ctx: VerificationContext,
) -> tuple[Rubric | None, VerificationResultRubric | None]:
    """The rubric left to evaluate and the stored LLM trait scores reused.

    When a stored result is re-verified by the same judge on the same input,
    an LLM trait it scored (by name) keeps its score and only the others are
    asked; deep-judgment rubrics and trait filters always ask again. Returns
    ``(ctx.rubric, None)`` when nothing is reused.
    """
    previous = ctx.previous
    rubric = ctx.rubric
    stored = previous.rubric if previous is not None else None
    if (
        rubric is None
        or stored is None
        or not stored.llm_trait_scores
        or ctx.config.deep_judgment_rubric_mode != "disabled"
        or previous is None
        or previous.used_full_trace != ctx.config.use_full_trace_for_rubric
        or previous.metadata.parsing_system_prompt != ctx.parsing.system_prompt
    ):
        return rubric, None
    scores = stored.llm_trait_scores
    kept = [t for t in rubric.llm_traits if t.name in scores]
    if not kept:
        return rubric, None
    names = {t.name for t in kept}
    labels = {k: v for k, v in (stored.llm_trait_labels or {}).items() if k in names}
    reused = VerificationResultRubric(
        rubric_evaluation_performed=True,
        llm_trait_scores={k: v for k, v in scores.items() if k in names},
        llm_trait_labels=labels or None,
    )
    rest = rubric.model_copy(
        update={"llm_traits": [t for t in rubric.llm_traits if t.name not in names]}
    )
    return rest, reused


def _with_stored(
    rubric: VerificationResultRubric | None, stored: VerificationResultRubric | None
) -> VerificationResultRubric | None:
    """``rubric`` with the reused scores added (the reused ones alone when
    nothing else was evaluated)."""
    if stored is None:
        return rubric
    if rubric is None:
        return stored
    scores = {**(stored.llm_trait_scores or {}), **(rubric.llm_trait_scores or {})}
    labels = {**(stored.llm_trait_labels or {}), **(rubric.llm_trait_labels or {})}
    return rubric.model_copy(
        update={
            "rubric_evaluation_performed": True,
            "llm_trait_scores": scores,
            "llm_trait_labels": labels or None,
        }
    )
