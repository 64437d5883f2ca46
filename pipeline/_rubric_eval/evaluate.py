"""Stage 11 (RubricEvaluation): evaluate every trait of a rubric against a response.

Order of work: dynamic-rubric presence check (one call), regex and callable traits
(local), LLM traits without deep judgment (``batch``: one call;
``sequential``: one call per trait), LLM traits with deep judgment (2-3+ calls
each), metric traits (one call each). ``config.rubric_trait_names``, when set,
restricts all of it (static and dynamic traits) to the named traits.
"""

from __future__ import annotations

import logging

from verifleet.pipeline._llm_protocol import ChatCaller
from verifleet.schemas import (
    DynamicRubric,
    Rubric,
    VerificationConfig,
    VerificationResultRubric,
)

from .agentic_traits import (
    AgenticScores,
    Investigate,
    evaluate_agentic_traits,
    evaluate_template_traits,
)
from .deep_judgment_rubric import SearchSource, TraitJudgment, judge_trait_deeply
from .deterministic import (
    CallableRunner,
    RegexRunner,
    evaluate_callable_traits,
    evaluate_regex_traits,
)
from .dj_settings import DeepJudgmentSettings, resolve_deep_judgment
from .dynamic import AGENTIC_SKIP_REASON, DynamicResolution, check_name_conflicts, resolve_dynamic
from .llm_traits import LLMTraitScores, evaluate_llm_traits
from .metric_traits import evaluate_metric_traits
from .outcome import RubricOutcome, deep_judgment_section
from .protocols import LLMTraitLike
from .traitset import TraitSet

__all__ = ["evaluate_rubric"]

logger = logging.getLogger(__name__)


def evaluate_rubric(
    judge: ChatCaller,
    *,
    question: str,
    response: str,
    rubric: Rubric | None,
    config: VerificationConfig,
    question_id: str,
    dynamic_rubric: DynamicRubric | None = None,
    search: SearchSource | None = None,
    investigate: Investigate | None = None,
    run_callable: CallableRunner | None = None,
    run_regex: RegexRunner | None = None,
) -> RubricOutcome:
    """Evaluate ``response`` against ``rubric`` (and ``dynamic_rubric``).

    Args:
        judge: The parsing model, bound to the unit (usage goes to
            ``rubric_evaluation``).
        question: The question text.
        response: The evaluation input chosen by the caller (full trace or final
            AI message, per ``use_full_trace_for_rubric``).
        rubric: A :class:`~verifleet.schemas.Rubric` (None: no static traits).
        config: The run's configuration (strategy, trait filter, deep judgment,
            prompt instructions).
        question_id: Selects question-specific deep-judgment settings.
        dynamic_rubric: A :class:`~verifleet.schemas.DynamicRubric`, if any.
        search: Gives the search function of deep-judgment traits with search
            enabled (called when such a trait needs it; cache inside it); None: such
            traits are judged without search and their metadata says why.
        investigate: Runs an agentic trait's investigation (the pipeline passes
            one backed by the agent runtime); None skips agentic traits, each
            named with the reason in ``skipped_traits``.
        run_callable: Runs one callable trait on a text (the pipeline passes the
            sandbox's runner); None calls the trait's own ``evaluate`` here.
        run_regex: The same for regex traits.

    Returns:
        The result sections plus per-trait failures and skips. A trait the judge
        could not score is left out of the scores and named in
        ``failed_traits``; it never fails the others.

    Raises:
        RubricError: a dynamic trait has the name of a static trait.
        ConfigError: a ``custom`` deep-judgment entry is invalid.
        ModelCallError: the judge could not be reached (the stage records the
            rubric as failed).
    """
    static = TraitSet.of(rubric)
    dynamic = TraitSet.of(dynamic_rubric)
    check_name_conflicts(static, dynamic)
    wanted = config.rubric_trait_names
    static, dynamic = static.only(wanted), dynamic.only(wanted)
    prompts = config.prompt_config
    rubric_text = prompts.rubric_evaluation if prompts else None

    resolution = DynamicResolution()
    if not dynamic.is_empty():
        resolution = resolve_dynamic(
            judge,
            question=question,
            response=response,
            dynamic=dynamic,
            instructions=(prompts.dynamic_rubric_presence if prompts else None,),
        )
    traits = static.merged(resolution.promoted)

    outcome = RubricOutcome(rubric=VerificationResultRubric(), model_calls=resolution.model_calls)
    agentic = AgenticScores()
    if investigate is None:
        for trait in traits.agentic:
            logger.warning("rubric trait '%s' skipped: %s", trait.name, AGENTIC_SKIP_REASON)
            outcome.skipped_traits[trait.name] = AGENTIC_SKIP_REASON
    elif traits.agentic:
        agentic = evaluate_agentic_traits(
            judge,
            question=question,
            response=response,
            traits=traits.agentic,
            investigate=investigate,
            instructions=(rubric_text,),
        )
        outcome.failed_traits.update(agentic.failures)
        outcome.model_calls += agentic.model_calls

    regex = evaluate_regex_traits(response, traits.regex, run=run_regex)
    callables = evaluate_callable_traits(response, traits.callable, run=run_callable)
    outcome.failed_traits.update(regex.failures)
    outcome.failed_traits.update(callables.failures)

    templated = [t for t in traits.llm if str(t.kind) == "template"]
    scalar = [t for t in traits.llm if str(t.kind) != "template"]
    deep, standard = _split_deep_judgment(scalar, question_id, config)
    llm = evaluate_llm_traits(
        judge,
        question=question,
        response=response,
        traits=standard,
        strategy=config.rubric_evaluation_strategy,
        instructions=(rubric_text,),
    )
    evaluate_template_traits(
        judge,
        question=question,
        response=response,
        traits=templated,
        into=llm,
        instructions=(rubric_text,),
    )
    standard_scores = dict(llm.scores)
    judgments = _judge_deeply(
        judge,
        question,
        response,
        deep,
        instructions=(rubric_text, prompts.deep_judgment if prompts else None),
        into=llm,
        search=search,
    )

    metric = evaluate_metric_traits(
        judge,
        question=question,
        response=response,
        traits=traits.metric,
        instructions=(rubric_text,),
    )
    outcome.failed_traits.update(llm.failures)
    outcome.failed_traits.update(metric.failures)
    outcome.model_calls += llm.model_calls + metric.model_calls

    dynamic_used = dynamic_rubric is not None
    outcome.rubric = VerificationResultRubric(
        rubric_evaluation_performed=True,
        rubric_evaluation_strategy=config.rubric_evaluation_strategy,
        llm_trait_scores=llm.scores if traits.llm else None,
        llm_trait_labels=llm.labels or None,
        regex_trait_scores=regex.scores if traits.regex else None,
        callable_trait_scores=callables.scores if traits.callable else None,
        metric_trait_scores=metric.scores if traits.metric else None,
        metric_trait_confusion_lists=metric.confusion_lists if traits.metric else None,
        agentic_trait_scores=agentic.scores if traits.agentic and investigate else None,
        agentic_trait_investigation_traces=agentic.traces or None,
        agentic_trait_extraction_metadata=agentic.extraction or None,
        dynamic_rubric_promoted_traits=resolution.promoted_names if dynamic_used else None,
        dynamic_rubric_skipped_traits=resolution.skipped if dynamic_used else None,
    )
    outcome.deep_judgment_rubric = deep_judgment_section(judgments, standard_scores)
    return outcome


def _split_deep_judgment(
    traits: list[LLMTraitLike], question_id: str, config: VerificationConfig
) -> tuple[list[tuple[LLMTraitLike, DeepJudgmentSettings]], list[LLMTraitLike]]:
    deep: list[tuple[LLMTraitLike, DeepJudgmentSettings]] = []
    standard: list[LLMTraitLike] = []
    for trait in traits:
        settings = resolve_deep_judgment(trait, question_id=question_id, config=config)
        if settings.enabled:
            deep.append((trait, settings))
        else:
            standard.append(trait)
    return deep, standard


def _judge_deeply(
    judge: ChatCaller,
    question: str,
    response: str,
    deep: list[tuple[LLMTraitLike, DeepJudgmentSettings]],
    *,
    instructions: tuple[str | None, ...],
    into: LLMTraitScores,
    search: SearchSource | None = None,
) -> dict[str, TraitJudgment]:
    # Deep-judgment scores join the ordinary LLM scores: llm_trait_scores holds
    # every LLM trait, whichever way it was judged.
    judgments: dict[str, TraitJudgment] = {}
    for trait, settings in deep:
        judgment = judge_trait_deeply(
            judge,
            question=question,
            response=response,
            trait=trait,
            settings=settings,
            instructions=instructions,
            search=search,
        )
        judgments[trait.name] = judgment
        into.model_calls += int(judgment.metadata["model_calls"])
        if judgment.value is not None:
            into.scores[trait.name] = judgment.value.score
            if judgment.value.label is not None:
                into.labels[trait.name] = judgment.value.label
        elif judgment.error:
            into.failures[trait.name] = judgment.error
    return judgments
