"""Intervals for rates and means: Wilson, clustered (sandwich) and cluster bootstrap.

Everything here is pure: plain sequences in, frozen dataclasses out, numpy for
the arithmetic. A *cluster* is the unit that was sampled (a question); the
observations inside it (replicates, judges, answering models) are not
independent of each other, so an interval that treats them as independent is
too narrow. The clustered estimators take that into account.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING

from verifleet.errors import StatisticsError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_REPS",
    "DEFAULT_SEED",
    "Interval",
    "binom_cdf_half",
    "cluster_bootstrap_mean",
    "clustered_mean",
    "clustered_mean_from_sums",
    "naive_mean",
    "rate_interval",
    "rate_interval_from_sums",
    "wilson",
    "z_quantile",
]

DEFAULT_LEVEL = 0.95
"""The confidence level of every interval unless a caller asks for another."""
DEFAULT_REPS = 2000
"""Bootstrap resamples: enough for a stable 95 % percentile interval."""
DEFAULT_SEED = 20261128
"""The bootstrap's fixed seed: the same data always give the same interval."""


@dataclass(frozen=True)
class Interval:
    """An estimate with its confidence interval.

    Attributes:
        estimate: The point estimate (a rate, a mean, a difference).
        low: The interval's lower bound.
        high: The interval's upper bound.
        n: Observations the estimate is computed from.
        clusters: Independent clusters among them (``n`` when not clustered).
        method: How the interval was computed (``wilson``, ``clustered``,
            ``naive``, ``bootstrap``).
        level: The confidence level, e.g. 0.95.
        se: The standard error behind a normal interval (None for Wilson and
            the bootstrap's percentile interval, which have none).
    """

    estimate: float
    low: float
    high: float
    n: int
    clusters: int
    method: str
    level: float = DEFAULT_LEVEL
    se: float | None = None

    def as_dict(self) -> dict[str, object]:
        """The interval as a JSON-ready dict (the field names above)."""
        return asdict(self)

    @property
    def width(self) -> float:
        """``high - low``."""
        return self.high - self.low


def z_quantile(level: float) -> float:
    """The two-sided normal quantile of a confidence level (1.96 for 0.95).

    Raises:
        StatisticsError: ``level`` is not strictly between 0 and 1.
    """
    if not 0.0 < level < 1.0:
        raise StatisticsError(f"confidence level must be between 0 and 1, got {level!r}")
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def wilson(successes: int, total: int, level: float = DEFAULT_LEVEL) -> Interval:
    """The Wilson score interval of a proportion.

    Unlike the normal approximation it stays inside [0, 1] and is honest for
    small counts and rates near 0 or 1. It assumes independent trials.

    Returns:
        The rate and its interval; when ``total`` is 0 the estimate is 0 and the
        interval is the whole of [0, 1] (nothing is known).

    Raises:
        StatisticsError: negative counts or ``successes > total``.
    """
    if total < 0 or successes < 0 or successes > total:
        raise StatisticsError(f"need 0 <= successes <= total, got {successes} of {total}")
    if total == 0:
        return Interval(0.0, 0.0, 1.0, 0, 0, "wilson", level)
    z = z_quantile(level)
    rate = successes / total
    denominator = 1 + z * z / total
    centre = (rate + z * z / (2 * total)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / total + z * z / (4 * total * total)) / denominator
    # At 0 or total successes a bound is exactly 0 or 1; the float formula is
    # only close to it.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == total else min(1.0, centre + half)
    return Interval(rate, low, high, total, total, "wilson", level)


def _cluster_sums(
    values: Sequence[float], clusters: Sequence[Hashable]
) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster sums and counts, in first-seen cluster order."""
    import numpy as np  # loaded by the first statistic, not at a run's start

    if len(values) != len(clusters):
        raise StatisticsError(
            f"{len(values)} values but {len(clusters)} cluster labels: they must pair up"
        )
    if not values:
        raise StatisticsError("no observations")
    index: dict[Hashable, int] = {}
    codes = np.fromiter((index.setdefault(c, len(index)) for c in clusters), dtype=np.int64)
    data = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(data)):
        raise StatisticsError("values must be finite numbers (no NaN or infinity)")
    sums = np.bincount(codes, weights=data, minlength=len(index))
    counts = np.bincount(codes, minlength=len(index)).astype(float)
    return sums, counts


def _bounded(low: float, high: float, bounds: tuple[float, float] | None) -> tuple[float, float]:
    if bounds is None:
        return low, high
    return max(bounds[0], low), min(bounds[1], high)


def clustered_mean(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    level: float = DEFAULT_LEVEL,
    bounds: tuple[float, float] | None = None,
) -> Interval:
    """The mean with a cluster-robust (sandwich) normal interval.

    The variance is the CR1 sandwich of a regression on a constant, clustered
    by ``clusters``: ``G/(G-1) * sum_g (sum_{i in g} (y_i - mean))^2 / N^2``
    (statsmodels' ``OLS(...).fit(cov_type="cluster")`` gives the same standard
    error). Observations in one cluster may be correlated; clusters must be
    independent.

    Args:
        values: The observations (0/1 for a pass rate, scores for a trait).
        clusters: One label per observation (e.g. the question id).
        level: The confidence level.
        bounds: Clip the interval to these bounds (``(0, 1)`` for a rate).

    Raises:
        StatisticsError: no observations, mismatched lengths, non-finite values,
            or fewer than two clusters (the variance is then undefined).
    """
    sums, counts = _cluster_sums(values, clusters)
    return clustered_mean_from_sums(sums, counts, level, bounds)


def clustered_mean_from_sums(
    sums: Sequence[float] | np.ndarray,
    counts: Sequence[float] | np.ndarray,
    level: float = DEFAULT_LEVEL,
    bounds: tuple[float, float] | None = None,
) -> Interval:
    """:func:`clustered_mean` from each cluster's sum and count of observations
    (what a streaming tally keeps instead of every observation).

    Raises:
        StatisticsError: fewer than two clusters, mismatched lengths, or a
            cluster with no observations.
    """
    import numpy as np  # loaded by the first statistic, not at a run's start

    sums = np.asarray(sums, dtype=float)
    counts = np.asarray(counts, dtype=float)
    if sums.shape != counts.shape or np.any(counts <= 0):
        raise StatisticsError("need one positive count per cluster sum")
    groups = len(sums)
    if groups < 2:
        raise StatisticsError("a clustered interval needs at least two clusters")
    total = counts.sum()
    mean = float(sums.sum() / total)
    residual = sums - mean * counts
    variance = groups / (groups - 1) * float(np.sum(residual**2)) / total**2
    se = math.sqrt(variance)
    half = z_quantile(level) * se
    low, high = _bounded(mean - half, mean + half, bounds)
    return Interval(mean, low, high, int(total), groups, "clustered", level, se)


def naive_mean(
    values: Sequence[float],
    level: float = DEFAULT_LEVEL,
    bounds: tuple[float, float] | None = None,
) -> Interval:
    """The mean with a normal interval that treats every observation as
    independent (standard error ``s / sqrt(n)``, ``s`` with ``n - 1``).

    Shown beside a clustered interval to say how much the clustering matters;
    on replicated data it is too narrow.

    Raises:
        StatisticsError: fewer than two observations or non-finite values.
    """
    if len(values) < 2:
        raise StatisticsError("a naive interval needs at least two observations")
    result = clustered_mean(values, range(len(values)), level, bounds)
    return Interval(
        result.estimate, result.low, result.high, result.n, result.n, "naive", level, result.se
    )


def cluster_bootstrap_mean(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    level: float = DEFAULT_LEVEL,
    reps: int = DEFAULT_REPS,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """The mean with a percentile interval from resampling whole clusters.

    Each resample draws as many clusters as there are, with replacement, and
    takes the mean of all their observations; the interval is the central
    ``level`` of those means. The seed is fixed, so the same data always give
    the same interval.

    Raises:
        StatisticsError: no observations, mismatched lengths, non-finite
            values, fewer than two clusters, or ``reps < 100``.
    """
    import numpy as np  # loaded by the first statistic, not at a run's start

    if reps < 100:
        raise StatisticsError(f"a bootstrap needs at least 100 resamples, got {reps}")
    sums, counts = _cluster_sums(values, clusters)
    groups = len(sums)
    if groups < 2:
        raise StatisticsError("a cluster bootstrap needs at least two clusters")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, groups, size=(reps, groups))
    means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    estimate = float(sums.sum() / counts.sum())
    return Interval(
        estimate, float(low), float(high), int(counts.sum()), groups, "bootstrap", level
    )


def rate_interval(
    passed: Sequence[bool], clusters: Sequence[Hashable], level: float = DEFAULT_LEVEL
) -> Interval:
    """A pass rate's interval that respects clustering where it can.

    With one observation per cluster (no replicates) the clustered estimator
    adds nothing and Wilson's is better, so that is used; with several
    observations in some cluster and at least two clusters, the clustered
    interval (clipped to [0, 1]). :func:`rate_interval_from_sums` is the same
    from per-cluster counts.

    Raises:
        StatisticsError: mismatched lengths.
    """
    if len(passed) != len(clusters):
        raise StatisticsError(
            f"{len(passed)} verdicts but {len(clusters)} cluster labels: they must pair up"
        )
    if not passed:
        return wilson(0, 0, level)
    sums, counts = _cluster_sums([1.0 if p else 0.0 for p in passed], clusters)
    return rate_interval_from_sums(sums, counts, level)


def rate_interval_from_sums(
    passed: Sequence[float] | np.ndarray,
    judged: Sequence[float] | np.ndarray,
    level: float = DEFAULT_LEVEL,
) -> Interval:
    """:func:`rate_interval` from each cluster's passes and verdicts (what a
    streaming tally or a grouped table keeps): Wilson's interval when fewer
    than two clusters have a verdict or every one has exactly one, the
    clustered interval clipped to [0, 1] otherwise. Clusters with no verdict
    are ignored.

    Raises:
        StatisticsError: mismatched lengths, negative counts or more passes
            than verdicts in a cluster.
    """
    import numpy as np  # loaded by the first statistic, not at a run's start

    passes = np.asarray(passed, dtype=float)
    counts = np.asarray(judged, dtype=float)
    if passes.shape != counts.shape:
        raise StatisticsError("need one verdict count per cluster's passes")
    if np.any(passes < 0) or np.any(passes > counts):
        raise StatisticsError("need 0 <= passes <= verdicts in every cluster")
    keep = counts > 0
    passes, counts = passes[keep], counts[keep]
    if len(counts) < 2 or np.all(counts == 1):
        return wilson(round(float(passes.sum())), round(float(counts.sum())), level)
    return clustered_mean_from_sums(passes, counts, level, (0.0, 1.0))


def binom_cdf_half(k: int, n: int) -> float:
    """``P(X <= k)`` for ``X ~ Binomial(n, 1/2)``, exactly summed in log space.

    Raises:
        StatisticsError: ``n < 0``.
    """
    if n < 0:
        raise StatisticsError(f"binomial n must be >= 0, got {n}")
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    log_half_n = -n * math.log(2.0)
    logs = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + log_half_n
        for i in range(k + 1)
    ]
    top = max(logs)
    return min(1.0, math.exp(top) * math.fsum(math.exp(v - top) for v in logs))
