"""The entry point the local runner and the Celery task both call."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from verifleet.schemas import (
    DynamicRubric,
    ModelConfig,
    Question,
    Rubric,
    VerificationConfig,
    VerificationResult,
)

from ._answer import CachedAnswer
from ._context import VerificationContext
from ._llm import UsageTracker
from ._llm_protocol import Message
from ._orchestrator import StageOrchestrator
from ._resources import PipelineResources

__all__ = ["has_rubric_traits", "run_unit"]

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
    """Verify one (question, answering model, replicate) with every parsing model.

    The answer is generated once (stage 2) and reused by each parsing model, so N
    judges cost one answering call. A stage never knows where it runs: the local
    runner and the Celery task call exactly this.

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
