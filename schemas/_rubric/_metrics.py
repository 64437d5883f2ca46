"""Confusion-matrix metrics for metric rubric traits.

The judge sorts items into buckets (``tp``, ``fn``, ``fp`` and, in full-matrix
mode, ``tn``); the metrics are plain ratios of the bucket sizes. A ratio whose
denominator is zero is 0.0: an empty answer scores nothing rather than failing.
"""

from __future__ import annotations

from typing import Literal

from .._errors import RubricError

__all__ = [
    "METRIC_REQUIREMENTS",
    "VALID_METRICS",
    "VALID_METRICS_FULL_MATRIX",
    "VALID_METRICS_TP_ONLY",
    "MetricMode",
    "available_buckets",
    "compute_metrics",
    "deduplicate_confusion",
]

MetricMode = Literal["tp_only", "full_matrix"]

VALID_METRICS_TP_ONLY = frozenset({"precision", "recall", "f1"})
VALID_METRICS_FULL_MATRIX = frozenset({"precision", "recall", "f1", "specificity", "accuracy"})
VALID_METRICS = VALID_METRICS_TP_ONLY | VALID_METRICS_FULL_MATRIX

METRIC_REQUIREMENTS: dict[str, frozenset[str]] = {
    "precision": frozenset({"tp", "fp"}),
    "recall": frozenset({"tp", "fn"}),
    "f1": frozenset({"tp", "fp", "fn"}),
    "specificity": frozenset({"tn", "fp"}),
    "accuracy": frozenset({"tp", "tn", "fp", "fn"}),
}

_BUCKETS: dict[str, frozenset[str]] = {
    "tp_only": frozenset({"tp", "fn", "fp"}),
    "full_matrix": frozenset({"tp", "fn", "fp", "tn"}),
}


def available_buckets(mode: str) -> frozenset[str]:
    """Buckets a metric trait in ``mode`` produces.

    Raises:
        RubricError: ``mode`` is neither ``tp_only`` nor ``full_matrix``.
    """
    try:
        return _BUCKETS[mode]
    except KeyError:
        raise RubricError(
            f"unknown metric evaluation mode {mode!r}; expected 'tp_only' or 'full_matrix'"
        ) from None


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


def compute_metrics(
    confusion: dict[str, list[str]], metrics: list[str], mode: MetricMode
) -> dict[str, float]:
    """Compute the requested metrics from confusion lists.

    Args:
        confusion: Items per bucket, e.g. ``{"tp": [...], "fn": [...], "fp": [...]}``;
            a missing bucket counts as empty. ``tn`` is ignored in ``tp_only`` mode.
        metrics: Names among precision, recall, f1, specificity, accuracy.
        mode: ``tp_only`` or ``full_matrix``.

    Returns:
        ``{metric: value}`` in the order requested; 0.0 where a denominator is 0.

    Raises:
        RubricError: an unknown metric or mode, or a metric the mode cannot compute
            (specificity and accuracy need ``full_matrix``).
    """
    buckets = available_buckets(mode)
    counts = {b: len(confusion.get(b, [])) if b in buckets else 0 for b in _BUCKETS["full_matrix"]}
    tp, fn, fp, tn = counts["tp"], counts["fn"], counts["fp"], counts["tn"]
    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, tp + fn)
    values = {
        "precision": precision,
        "recall": recall,
        "f1": (2 * precision * recall / (precision + recall)) if precision + recall else 0.0,
        "specificity": _ratio(tn, tn + fp),
        "accuracy": _ratio(tp + tn, tp + tn + fp + fn),
    }
    result: dict[str, float] = {}
    for name in metrics:
        if name not in METRIC_REQUIREMENTS:
            raise RubricError(f"unknown metric {name!r}; valid: {sorted(VALID_METRICS)}")
        if not METRIC_REQUIREMENTS[name] <= buckets:
            raise RubricError(f"metric {name!r} needs true negatives: use full_matrix mode")
        result[name] = values[name]
    return result


def deduplicate_confusion(confusion: dict[str, list[str]]) -> dict[str, list[str]]:
    """Drop repeated items within each bucket (case-insensitive, surrounding
    whitespace ignored), keeping the first spelling; used when a metric trait has
    ``repeated_extraction`` set."""
    result: dict[str, list[str]] = {}
    for bucket, items in confusion.items():
        seen: set[str] = set()
        kept: list[str] = []
        for item in items:
            key = item.strip().lower()
            if key not in seen:
                seen.add(key)
                kept.append(item)
        result[bucket] = kept
    return result
