"""Paired comparison of two sets of verdicts on the same units.

Two runs (or two models of one run) answered the same questions; each *pair*
is one unit judged on both sides (same question, answering model, judge and
replicate). The difference in pass rate is the mean of the per-pair
differences ``b - a``; its interval treats questions as clusters, because the
replicates and models of one question share its difficulty.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from verifleet.errors import StatisticsError

from ._core import (
    DEFAULT_LEVEL,
    DEFAULT_REPS,
    DEFAULT_SEED,
    Interval,
    binom_cdf_half,
    cluster_bootstrap_mean,
    clustered_mean,
    naive_mean,
)

__all__ = ["PairedComparison", "mcnemar_exact", "paired_comparison"]


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """McNemar's exact test on the discordant pairs.

    Under "no difference" a pair that changed is as likely to have changed one
    way as the other, so ``min(a_only, b_only)`` is binomial with ``n =
    a_only + b_only`` and ``p = 1/2``; the two-sided p-value doubles its lower
    tail (capped at 1). The concordant pairs carry no information. It assumes
    the pairs are independent; replicates of one question are not (see
    docs/results.md).

    Args:
        a_only: Pairs that pass in A and fail in B.
        b_only: Pairs that fail in A and pass in B.

    Returns:
        The p-value; 1.0 when there is no discordant pair.

    Raises:
        StatisticsError: a negative count.
    """
    if a_only < 0 or b_only < 0:
        raise StatisticsError(f"discordant counts must be >= 0, got {a_only} and {b_only}")
    n = a_only + b_only
    if n == 0:
        return 1.0
    return min(1.0, 2.0 * binom_cdf_half(min(a_only, b_only), n))


@dataclass(frozen=True)
class PairedComparison:
    """The paired comparison of A and B (B minus A).

    Attributes:
        pairs: Units judged on both sides.
        clusters: Distinct questions among them.
        rate_a: A's pass rate over the pairs.
        rate_b: B's pass rate over the pairs.
        difference: ``rate_b - rate_a`` with the clustered (sandwich) interval.
        bootstrap: The same difference with the cluster-bootstrap interval
            (None with fewer than two questions).
        naive: The same difference with an interval that treats pairs as
            independent; too narrow when questions have several pairs.
        both_pass: Pairs passing on both sides.
        both_fail: Pairs failing on both sides.
        a_only: Pairs passing in A only (B lost them).
        b_only: Pairs passing in B only (B gained them).
        mcnemar_p: McNemar's exact p-value on ``a_only`` and ``b_only``.
    """

    pairs: int
    clusters: int
    rate_a: float
    rate_b: float
    difference: Interval | None
    bootstrap: Interval | None
    naive: Interval | None
    both_pass: int
    both_fail: int
    a_only: int
    b_only: int
    mcnemar_p: float

    def as_dict(self) -> dict[str, object]:
        """The comparison as a JSON-ready dict (intervals as nested dicts)."""
        return {
            "pairs": self.pairs,
            "clusters": self.clusters,
            "rate_a": self.rate_a,
            "rate_b": self.rate_b,
            "difference": self.difference.as_dict() if self.difference else None,
            "bootstrap": self.bootstrap.as_dict() if self.bootstrap else None,
            "naive": self.naive.as_dict() if self.naive else None,
            "both_pass": self.both_pass,
            "both_fail": self.both_fail,
            "a_only": self.a_only,
            "b_only": self.b_only,
            "mcnemar_p": self.mcnemar_p,
        }


def paired_comparison(
    a: Sequence[bool],
    b: Sequence[bool],
    clusters: Sequence[Hashable],
    *,
    level: float = DEFAULT_LEVEL,
    reps: int = DEFAULT_REPS,
    seed: int = DEFAULT_SEED,
) -> PairedComparison:
    """Compare two sets of verdicts paired position by position.

    Args:
        a: A's verdict for each pair (True = passed).
        b: B's verdict for the same pairs, in the same order.
        clusters: Each pair's cluster (its question id).
        level: The confidence level of the intervals.
        reps: Bootstrap resamples.
        seed: The bootstrap's seed.

    Returns:
        The counts, rates, difference with clustered, bootstrap and naive
        intervals (None where there are too few pairs or questions for one),
        and McNemar's p-value.

    Raises:
        StatisticsError: the three sequences differ in length or are empty.
    """
    if not len(a) == len(b) == len(clusters):
        raise StatisticsError(
            f"paired verdicts must line up: {len(a)} in A, {len(b)} in B, "
            f"{len(clusters)} cluster labels"
        )
    if not a:
        raise StatisticsError("no pairs to compare")
    both_pass = sum(1 for x, y in zip(a, b, strict=True) if x and y)
    both_fail = sum(1 for x, y in zip(a, b, strict=True) if not x and not y)
    a_only = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    b_only = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    n = len(a)
    diffs = [float(bool(y)) - float(bool(x)) for x, y in zip(a, b, strict=True)]
    groups = len(set(clusters))
    bounds = (-1.0, 1.0)
    difference = clustered_mean(diffs, clusters, level, bounds) if groups >= 2 else None
    bootstrap = cluster_bootstrap_mean(diffs, clusters, level, reps, seed) if groups >= 2 else None
    naive = naive_mean(diffs, level, bounds) if n >= 2 else None
    return PairedComparison(
        pairs=n,
        clusters=groups,
        rate_a=(both_pass + a_only) / n,
        rate_b=(both_pass + b_only) / n,
        difference=difference,
        bootstrap=bootstrap,
        naive=naive,
        both_pass=both_pass,
        both_fail=both_fail,
        a_only=a_only,
        b_only=b_only,
        mcnemar_p=mcnemar_exact(a_only, b_only),
    )
