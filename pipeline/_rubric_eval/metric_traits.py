"""Metric traits: the judge sorts the trait's instructions into confusion buckets,
and precision / recall / F1 (plus specificity / accuracy in ``full_matrix`` mode)
come from the rubric package's :func:`~verifleet.schemas.compute_metrics`.

One judge call per metric trait. The scores of a trait hold the requested metrics
and the bucket sizes as floats (``tp``, ``fn``, ``fp`` and, in ``full_matrix``,
``tn``), as in the specification's example.

Failure behaviour: a trait whose reply never matches the schema is left out of both
the scores and the confusion lists and recorded in ``failures``; a
:class:`ModelCallError` propagates.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from verifleet.pipeline._llm_protocol import ChatCaller, StructuredOutputError
from verifleet.schemas import MetricMode, compute_metrics, deduplicate_confusion

from .llm_traits import STAGE
from .prompts import metric_messages, metric_schema
from .protocols import MetricTraitLike

__all__ = ["MetricScores", "confusion_from_reply", "evaluate_metric_traits"]

logger = logging.getLogger(__name__)


@dataclass
class MetricScores:
    """Metric trait results keyed by trait name."""

    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    confusion_lists: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    model_calls: int = 0


def confusion_from_reply(trait: MetricTraitLike, reply: dict[str, object]) -> dict[str, list[str]]:
    """The four buckets from a judge reply.

    Non-string items are stringified, blanks dropped; ``tn`` is always empty in
    ``tp_only`` mode (there is no negative set to draw from). With
    ``repeated_extraction`` each bucket is deduplicated case-insensitively, keeping
    the first spelling.
    """
    full = trait.evaluation_mode == "full_matrix"
    lists: dict[str, list[str]] = {}
    for bucket in ("tp", "fn", "fp", "tn"):
        raw = reply.get(bucket) if (full or bucket != "tn") else None
        items = [str(x).strip() for x in raw] if isinstance(raw, list) else []
        lists[bucket] = [x for x in items if x]
    return deduplicate_confusion(lists) if trait.repeated_extraction else lists


def evaluate_metric_traits(
    judge: ChatCaller,
    *,
    question: str,
    response: str,
    traits: Sequence[MetricTraitLike],
    instructions: Sequence[str | None] = (),
) -> MetricScores:
    """Classify and score each metric trait.

    Raises:
        ModelCallError: a judge call failed for good.
    """
    result = MetricScores()
    for trait in traits:
        result.model_calls += 1
        try:
            reply = judge.invoke_json(
                metric_messages(question, response, trait, instructions=instructions),
                stage=STAGE,
                schema=metric_schema(trait),
                schema_name="confusion_lists",
            )
        except StructuredOutputError as exc:
            logger.warning("metric trait '%s' left unscored: %s", trait.name, exc)
            result.failures[trait.name] = f"the judge never returned valid confusion lists: {exc}"
            continue
        lists = confusion_from_reply(trait, reply)
        mode: MetricMode = "full_matrix" if trait.evaluation_mode == "full_matrix" else "tp_only"
        metrics = compute_metrics(lists, list(trait.metrics), mode)
        counted = ("tp", "fn", "fp", "tn") if mode == "full_matrix" else ("tp", "fn", "fp")
        scores = {bucket: float(len(lists[bucket])) for bucket in counted}
        scores.update({name: float(value) for name, value in metrics.items()})
        result.scores[trait.name] = scores
        result.confusion_lists[trait.name] = lists
    return result
