"""Deep judgment of one LLM trait: evidence first, then reasoning, then the score.

Stages (recorded in ``trait_metadata[name]["stages_completed"]``):

1. ``excerpt_extraction`` (only with excerpts enabled): the judge quotes passages;
   each is validated by fuzzy matching (:mod:`.excerpts`). If none passes, the
   judge is asked again with feedback naming the refused quotes, up to
   ``excerpt_retry_attempts`` more times. A trait still without a valid excerpt
   is **auto-failed**: it gets no score and is listed in
   ``traits_without_valid_excerpts`` (stage 12 fails the result).
2. ``reasoning_generation``: a free-text argument grounded in the excerpts (or in
   the whole response when excerpts are off).
3. ``score_extraction``: the verdict that follows from the reasoning, validated
   like any LLM trait value (:mod:`.values`).

With search enabled (and excerpts on), each accepted excerpt is looked up with the
configured provider (Tavily, or BM25 over local documents) and the judge rates its
hallucination risk; the trait's ``rubric_hallucination_risk_assessment`` entry is
``{"overall_risk", "per_excerpt_risks"}`` (the highest risk wins), as in the
original. When search cannot run (no provider, a failing one, no excerpts) the
trait is scored without it and ``search_skipped`` in its metadata says why.

Failure behaviour, as in the original framework: a reply that never matches the
schema during excerpt extraction counts as a failed attempt; a score that cannot
be extracted, or a judge call that fails for good (:class:`ModelCallError`),
**auto-fails** the trait like a missing excerpt (no score, ``error`` in its
metadata, listed in ``traits_without_valid_excerpts``). The other traits go on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verifleet.pipeline._checks import CheckReplyError, SearchFunction
from verifleet.pipeline._checks.deep_judgment_search import assess_hallucination_risk
from verifleet.pipeline._llm_protocol import ChatCaller, ModelCallError, StructuredOutputError
from verifleet.pipeline._search import SearchError

from .dj_settings import DeepJudgmentSettings
from .excerpts import split_excerpts
from .llm_traits import STAGE
from .prompts import (
    excerpt_feedback,
    excerpt_messages,
    excerpt_schema,
    reasoning_messages,
    score_messages,
    score_schema,
)
from .protocols import LLMTraitLike
from .values import InvalidTraitValue, TraitValue, coerce_trait_value

__all__ = ["TraitJudgment", "judge_trait_deeply"]

logger = logging.getLogger(__name__)

SearchSource = Callable[[], SearchFunction]
"""Gives the search function (built on first use; raises SearchError when the
configured provider cannot be built)."""


@dataclass
class TraitJudgment:
    """The deep-judgment outcome of one trait.

    Attributes:
        value: The validated score (None when auto-failed or unscorable).
        reasoning: The judge's reasoning (None when auto-failed).
        excerpts: Accepted excerpts (None when excerpts are off).
        metadata: The spec's per-trait tracking dict.
        auto_failed: No valid excerpt after every retry.
        error: Why the trait is unscored, when it is.
    """

    value: TraitValue | None = None
    reasoning: str | None = None
    excerpts: list[dict[str, Any]] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    auto_failed: bool = False
    error: str | None = None
    hallucination_risk: dict[str, Any] | None = None


def judge_trait_deeply(
    judge: ChatCaller,
    *,
    question: str,
    response: str,
    trait: LLMTraitLike,
    settings: DeepJudgmentSettings,
    instructions: Sequence[str | None] = (),
    search: SearchSource | None = None,
) -> TraitJudgment:
    """Run the deep-judgment stages for ``trait``; never raises for the judge's
    failures: a judge call that fails for good auto-fails the trait (its metadata
    keeps the stages completed before and the error), as in the original."""
    try:
        return _judge(judge, question, response, trait, settings, instructions, search)
    except ModelCallError as exc:
        error = f"judge call failed: {exc}"
        logger.warning("rubric trait '%s' auto-fails: %s", trait.name, error)
        failed = TraitJudgment(auto_failed=True, error=error)
        failed.metadata = {"stages_completed": [], "model_calls": 0, "error": error}
        return failed


def _judge(
    judge: ChatCaller,
    question: str,
    response: str,
    trait: LLMTraitLike,
    settings: DeepJudgmentSettings,
    instructions: Sequence[str | None],
    search: SearchSource | None,
) -> TraitJudgment:
    outcome = TraitJudgment(
        metadata={
            "stages_completed": [],
            "model_calls": 0,
            "had_excerpts": settings.excerpt_enabled,
            "excerpt_retry_count": 0,
            "excerpt_validation_failed": False,
        }
    )
    meta = outcome.metadata
    if settings.search_enabled and not settings.excerpt_enabled:
        meta["search_skipped"] = "search checks excerpts, and excerpts are off for this trait"
    if settings.excerpt_enabled:
        excerpts = _extract_excerpts(judge, response, trait, settings, meta, instructions)
        if excerpts is None:
            meta["excerpt_validation_failed"] = True
            outcome.auto_failed = True
            outcome.error = (
                f"no valid excerpt after {meta['excerpt_retry_count']} "
                f"retr{'y' if meta['excerpt_retry_count'] == 1 else 'ies'}"
            )
            logger.warning("rubric trait '%s' auto-fails: %s", trait.name, outcome.error)
            return outcome
        outcome.excerpts = excerpts
        meta["stages_completed"].append("excerpt_extraction")
        if settings.search_enabled:
            _assess(judge, trait, outcome, search, instructions)

    meta["model_calls"] += 1
    outcome.reasoning = judge.invoke(
        reasoning_messages(
            question, response, trait, excerpts=outcome.excerpts, instructions=instructions
        ),
        stage=STAGE,
    ).strip()
    meta["stages_completed"].append("reasoning_generation")

    meta["model_calls"] += 1
    try:
        reply = judge.invoke_json(
            score_messages(trait, outcome.reasoning, instructions=instructions),
            stage=STAGE,
            schema=score_schema(trait),
            schema_name="trait_score",
        )
        outcome.value = coerce_trait_value(trait, reply.get("score"))
    except (StructuredOutputError, InvalidTraitValue) as exc:
        outcome.error = f"score extraction failed: {exc}"
        outcome.auto_failed = True
        meta["error"] = outcome.error
        logger.warning("rubric trait '%s' auto-fails: %s", trait.name, outcome.error)
        return outcome
    meta["stages_completed"].append("score_extraction")
    return outcome


def _assess(
    judge: ChatCaller,
    trait: LLMTraitLike,
    outcome: TraitJudgment,
    search: SearchSource | None,
    instructions: Sequence[str | None],
) -> None:
    """Search the trait's excerpts and have the judge rate their hallucination
    risk; on any failure the trait goes on without it (``search_skipped`` says why).

    Raises:
        ModelCallError: the judge could not be reached (the caller auto-fails the trait).
    """
    meta = outcome.metadata
    excerpts = outcome.excerpts or []
    if search is None:
        meta["search_skipped"] = "no search provider was given"
        return
    try:
        risk, calls = assess_hallucination_risk(
            judge,
            search(),
            {trait.name: excerpts},
            instructions="\n\n".join(i for i in instructions if i) or None,
        )
    except (SearchError, CheckReplyError, StructuredOutputError) as exc:
        meta["search_skipped"] = f"search-enhanced assessment failed: {exc}"
        logger.warning("rubric trait '%s': %s", trait.name, meta["search_skipped"])
        return
    meta["model_calls"] += calls
    if risk is None:
        meta["search_skipped"] = "the search provider failed (see the log)"
        return
    outcome.hallucination_risk = {
        "overall_risk": risk[trait.name],
        "per_excerpt_risks": [e.get("hallucination_risk") for e in excerpts],
    }
    meta["stages_completed"].append("hallucination_assessment")


def _extract_excerpts(
    judge: ChatCaller,
    response: str,
    trait: LLMTraitLike,
    settings: DeepJudgmentSettings,
    meta: dict[str, Any],
    instructions: Sequence[str | None],
) -> list[dict[str, Any]] | None:
    feedback: str | None = None
    threshold = settings.fuzzy_match_threshold
    for attempt in range(settings.excerpt_retry_attempts + 1):
        if attempt:
            meta["excerpt_retry_count"] += 1
        meta["model_calls"] += 1
        try:
            reply = judge.invoke_json(
                excerpt_messages(
                    response,
                    trait,
                    max_excerpts=settings.max_excerpts,
                    feedback=feedback,
                    instructions=instructions,
                ),
                stage=STAGE,
                schema=excerpt_schema(settings.max_excerpts),
                schema_name="trait_excerpts",
            )
        except StructuredOutputError as exc:
            feedback = f"Your reply was not valid JSON with an 'excerpts' list ({exc})."
            continue
        accepted, rejected = split_excerpts(reply.get("excerpts"), response, threshold)
        if accepted:
            return accepted[: settings.max_excerpts]
        feedback = excerpt_feedback(rejected, threshold)
    return None
