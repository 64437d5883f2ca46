"""The entry point the local runner and the Celery task both call."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from verifleet.schemas import (
    DynamicRubric,
    JobSpec,
    ModelConfig,
    Question,
    Rubric,
    Unit,
    VerificationConfig,
    VerificationResult,
)

from ._answer import CachedAnswer
from ._context import VerificationContext
from ._llm import UsageTracker
from ._llm_protocol import Message
from ._orchestrator import StageOrchestrator
from ._resources import PipelineResources

__all__ = ["has_rubric_traits", "run_unit", "verify_question"]

_log = logging.getLogger(__name__)


def has_rubric_traits(
    rubric: Rubric | None,
    question: Question | None = None,
    dynamic_rubric: DynamicRubric | None = None,
) -> bool:
    """Whether ``rubric``, ``dynamic_rubric`` or the question's dynamic rubric has
    any trait."""
    own = getattr(question, "question_dynamic_rubric", None)
    for candidate in (rubric, dynamic_rubric, own):
        all_traits = getattr(candidate, "all_traits", None)
        if callable(all_traits) and all_traits():
            return True
    return False


def run_unit(
    unit: Unit,
    spec: JobSpec,
    resources: PipelineResources | None = None,
    *,
    deadline: float | None = None,
    cached_answer: CachedAnswer | None = None,
) -> list[VerificationResult]:
    """Verify one unit of a job with every parsing model of its config.

    The local runner, the Celery task and the reward scorer all call exactly this:
    the unit names the question, answering model and replicate, the spec gives
    the config, the judges and the rubrics merged for the question.

    Args:
        unit: The unit (:meth:`JobSpec.unit`).
        spec: The job's benchmark and config.
        resources: Per-process caches; :meth:`PipelineResources.default` if None.
        deadline: ``time.monotonic()`` value after which model calls stop.
        cached_answer: An answer obtained earlier; skips the answering call.

    Returns:
        One result per parsing model, in the config's order; content failures
        are recorded in the results, never raised (see :func:`verify_question`).

    Raises:
        RubricError: a trait name is defined both globally and in the question.
        RuntimeError: the pipeline produced no result (a bug, not content).
    """
    return verify_question(
        unit.question,
        unit.answering,
        spec.config.parsing_models,
        spec.config,
        replicate=unit.replicate,
        rubric=spec.benchmark.rubric_for(unit.question),
        dynamic_rubric=spec.benchmark.dynamic_rubric_for(unit.question),
        resources=resources,
        cached_answer=cached_answer,
        deadline=deadline,
    )


def verify_question(
    question: Question,
    answering: ModelConfig,
    parsing_models: Sequence[ModelConfig],
    config: VerificationConfig,
    *,
    replicate: int | None,
    rubric: Rubric | None = None,
    dynamic_rubric: DynamicRubric | None = None,
    resources: PipelineResources | None = None,
    cached_answer: CachedAnswer | None = None,
    deadline: float | None = None,
    conversation: Sequence[Message] = (),
    previous: Mapping[str, VerificationResult] | None = None,
) -> list[VerificationResult]:
    """Verify one question with each of ``parsing_models``, everything spelled out.

    The answer is generated once (stage 2) and reused by each parsing model, so N
    judges cost one answering call. A stage never knows where it runs. Units of a
    job go through :func:`run_unit`; a scenario's turns, whose judges and rubrics
    are the node's, call this directly.

    Args:
        question: The :class:`~verifleet.schemas.Question`.
        answering: The answering model.
        parsing_models: The judges; one result each, in this order.
        config: The run's configuration.
        replicate: Replicate number (None when the run has one replicate).
        rubric: The :class:`~verifleet.schemas.Rubric` merged for this question.
        dynamic_rubric: The global and question dynamic rubrics merged
            (``Benchmark.dynamic_rubric_for``); None: the question's own, if any.
        resources: Per-process caches; :meth:`PipelineResources.default` if None.
        cached_answer: An answer obtained earlier; skips the answering call.
        deadline: ``time.monotonic()`` value after which model calls stop.
        conversation: Earlier user/assistant messages of a scenario; the
            answering model sees them before the question.
        previous: Stored results of this unit being re-verified, by the parsing
            model's ``canonical_key``: a judge's stage whose inputs are unchanged
            reuses the stored output (pass ``cached_answer`` too).

    Returns:
        One :class:`~verifleet.schemas.VerificationResult` per parsing model.
        Content failures (model errors after retries, invalid templates,
        unparsable judge replies) are recorded in the results
        (``completed_without_errors=False``, ``metadata.error``), never raised.

    Raises:
        RuntimeError: the pipeline produced no result (a bug, not content).
    """
    resources = resources or PipelineResources.default()
    if dynamic_rubric is None:
        dynamic_rubric = question.question_dynamic_rubric
    orchestrator = StageOrchestrator.for_config(
        config, has_rubric=has_rubric_traits(rubric, question, dynamic_rubric)
    )
    answer = cached_answer
    results: list[VerificationResult] = []
    for parsing in parsing_models:
        tracker = UsageTracker(pricing=config.pricing, replicate=replicate)
        ctx = VerificationContext(
            question=question,
            answering=answering,
            parsing=parsing,
            config=config,
            judge=resources.caller(parsing, tracker=tracker, config=config, deadline=deadline),
            resources=resources,
            rubric=rubric,
            dynamic_rubric=dynamic_rubric,
            replicate=replicate,
            deadline=deadline,
            usage=tracker,
            answer=answer,
            conversation=list(conversation),
            previous=(previous or {}).get(parsing.identity(role="parsing").canonical_key),
        )
        results.append(orchestrator.run(ctx))
        if answer is None:
            answer = ctx.answer
    _log.debug(
        "question %s: %d results from %s",
        question.id,
        len(results),
        orchestrator.stage_names,
    )
    return results
