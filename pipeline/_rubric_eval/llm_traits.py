"""LLM traits (boolean, score, literal) judged in one call or one call per trait.

``batch`` sends every trait in a single judge call whose JSON schema has one
property per trait; ``sequential`` sends one call per trait with the same prompt and
schema shape restricted to that trait. Values are validated by
:func:`~.values.coerce_trait_value` (clamping out-of-range scores, ``-1`` for an
unknown literal class).

Failure behaviour: a judge reply that never matches the schema
(:class:`StructuredOutputError`) costs only the traits it was about: in ``batch``
the traits are then asked one by one so a single unanswerable trait cannot lose the
others; in ``sequential`` that trait is recorded in ``failures``. A
:class:`ModelCallError` (the model is unreachable) propagates to the caller.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from verifleet.pipeline._llm_protocol import ChatCaller, StructuredOutputError

from .prompts import traits_messages, traits_schema
from .protocols import LLMTraitLike
from .values import InvalidTraitValue, coerce_trait_value, value_schema

__all__ = ["STAGE", "LLMTraitScores", "evaluate_llm_traits", "record_value"]

logger = logging.getLogger(__name__)

#: Usage-metadata stage label of every rubric judge call.
STAGE = "rubric_evaluation"

Strategy = Literal["batch", "sequential"]


@dataclass
class LLMTraitScores:
    """Scores of a set of LLM traits.

    Attributes:
        scores: ``{name: bool | int}`` (literal traits: the class index).
        labels: ``{name: class name}`` for literal traits.
        failures: ``{name: reason}`` for traits left unscored.
        model_calls: Judge calls made.
    """

    scores: dict[str, bool | int] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    model_calls: int = 0


def record_value(result: LLMTraitScores, trait: LLMTraitLike, raw: object) -> None:
    """Validate ``raw`` for ``trait`` into ``result`` (a failure when invalid)."""
    try:
        value = coerce_trait_value(trait, raw)
    except InvalidTraitValue as exc:
        logger.warning("rubric trait left unscored: %s", exc)
        result.failures[trait.name] = str(exc)
        return
    result.scores[trait.name] = value.score
    if value.label is not None:
        result.labels[trait.name] = value.label


def evaluate_llm_traits(
    judge: ChatCaller,
    *,
    question: str,
    response: str,
    traits: Sequence[LLMTraitLike],
    strategy: Strategy,
    instructions: Sequence[str | None] = (),
) -> LLMTraitScores:
    """Judge ``response`` on each of ``traits``.

    Args:
        judge: The parsing model.
        question: The question that was asked.
        response: The text to evaluate (full trace or final message).
        traits: LLM traits of kind boolean, score or literal.
        strategy: ``"batch"`` (one call) or ``"sequential"`` (one call per trait).
        instructions: Extra user instructions appended to the system prompt.

    Returns:
        Scores, literal labels, per-trait failures and the number of calls.

    Raises:
        ModelCallError: a judge call failed for good.
    """
    result = LLMTraitScores()
    usable: list[LLMTraitLike] = []
    for trait in traits:
        try:
            value_schema(trait)
        except InvalidTraitValue as exc:
            result.failures[trait.name] = str(exc)
            continue
        usable.append(trait)
    if not usable:
        return result
    if strategy == "batch" and len(usable) > 1:
        reply = _ask(judge, question, response, usable, instructions, result)
        if reply is not None:
            for trait in usable:
                record_value(result, trait, reply.get(trait.name))
            return result
        logger.warning("batch rubric reply unusable; judging %d traits one at a time", len(usable))
    for trait in usable:
        single = _ask(judge, question, response, [trait], instructions, result)
        if single is None:
            result.failures[trait.name] = "the judge never returned a valid JSON verdict"
        else:
            record_value(result, trait, single.get(trait.name))
    return result


def _ask(
    judge: ChatCaller,
    question: str,
    response: str,
    traits: Sequence[LLMTraitLike],
    instructions: Sequence[str | None],
    result: LLMTraitScores,
) -> dict[str, object] | None:
    result.model_calls += 1
    try:
        return judge.invoke_json(
            traits_messages(question, response, traits, instructions=instructions),
            stage=STAGE,
            schema=traits_schema(traits),
            schema_name="rubric_trait_scores",
        )
    except StructuredOutputError as exc:
        logger.warning(
            "judge gave no valid verdict for %s: %s", ", ".join(t.name for t in traits), exc
        )
        return None
