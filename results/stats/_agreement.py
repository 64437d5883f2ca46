"""Judge reliability: agreement between judges and accuracy against human labels.

Cohen's kappa compares two judges on the same units, Fleiss' kappa any number
of judges that each rated every unit; both say how much more the judges agree
than they would by chance given how often each says "pass". A judge measured
against human labels gets accuracy, precision and recall (``pass`` is the
positive class), each with a Wilson interval.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from verifleet.errors import StatisticsError

from ._core import DEFAULT_LEVEL, DEFAULT_REPS, DEFAULT_SEED, Interval, wilson, z_quantile

__all__ = ["Classification", "Kappa", "classification", "cohen_kappa", "fleiss_kappa"]


@dataclass(frozen=True)
class Kappa:
    """A kappa statistic with its interval.

    Attributes:
        kappa: The statistic (None when undefined: every rating is the same
            category, so chance agreement is already perfect).
        low: The interval's lower bound (None with ``kappa``).
        high: The interval's upper bound (None with ``kappa``).
        se: Its standard error (asymptotic for Cohen's, the bootstrap's
            standard deviation for Fleiss').
        units: Units rated.
        raters: Raters per unit.
        observed: Observed agreement.
        expected: Agreement expected by chance.
        method: ``cohen-asymptotic`` or ``fleiss-bootstrap``.
        level: The confidence level.
    """

    kappa: float | None
    low: float | None
    high: float | None
    se: float | None
    units: int
    raters: int
    observed: float
    expected: float
    method: str
    level: float = DEFAULT_LEVEL

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dict of the fields above."""
        return asdict(self)


def _categories(*groups: Sequence[Hashable]) -> dict[Hashable, int]:
    seen: dict[Hashable, int] = {}
    for group in groups:
        for value in group:
            seen.setdefault(value, len(seen))
    return seen


def cohen_kappa(
    first: Sequence[Hashable], second: Sequence[Hashable], level: float = DEFAULT_LEVEL
) -> Kappa:
    """Cohen's kappa of two raters with the large-sample interval.

    The standard error is Fleiss, Cohen and Everitt's (1969) estimate under the
    alternative (not the null), the one statsmodels' ``cohens_kappa`` reports;
    the interval is ``kappa +- z * se``, clipped to [-1, 1].

    Args:
        first: The first rater's category per unit.
        second: The second rater's, for the same units in the same order.
        level: The confidence level.

    Raises:
        StatisticsError: the sequences differ in length or are empty.
    """
    if len(first) != len(second):
        raise StatisticsError(f"raters must rate the same units: {len(first)} vs {len(second)}")
    if not first:
        raise StatisticsError("no units rated")
    index = _categories(first, second)
    table = np.zeros((len(index), len(index)))
    for x, y in zip(first, second, strict=True):
        table[index[x], index[y]] += 1
    n = table.sum()
    p = table / n
    rows = p.sum(axis=1)
    cols = p.sum(axis=0)
    observed = float(np.trace(p))
    expected = float(np.sum(rows * cols))
    if math.isclose(expected, 1.0):
        return Kappa(
            None, None, None, None, int(n), 2, observed, expected, "cohen-asymptotic", level
        )
    kappa = (observed - expected) / (1 - expected)
    diagonal = np.diag(p)
    term_a = float(np.sum(diagonal * (1 - (rows + cols) * (1 - kappa)) ** 2))
    off = p * (cols[:, None] + rows[None, :]) ** 2
    np.fill_diagonal(off, 0.0)
    term_b = (1 - kappa) ** 2 * float(off.sum())
    term_c = (kappa - expected * (1 - kappa)) ** 2
    variance = max(0.0, (term_a + term_b - term_c) / ((1 - expected) ** 2 * n))
    se = math.sqrt(variance)
    half = z_quantile(level) * se
    return Kappa(
        kappa,
        max(-1.0, kappa - half),
        min(1.0, kappa + half),
        se,
        int(n),
        2,
        observed,
        expected,
        "cohen-asymptotic",
        level,
    )


def _fleiss_from_counts(counts: np.ndarray) -> tuple[float | None, float, float]:
    """Fleiss' kappa, observed and chance agreement from a units x categories
    count table with the same number of ratings in every row."""
    raters = counts[0].sum()
    units = counts.shape[0]
    shares = counts.sum(axis=0) / (units * raters)
    per_unit = (np.sum(counts * counts, axis=1) - raters) / (raters * (raters - 1))
    observed = float(per_unit.mean())
    expected = float(np.sum(shares * shares))
    if math.isclose(expected, 1.0):
        return None, observed, expected
    return (observed - expected) / (1 - expected), observed, expected


def fleiss_kappa(
    ratings: Sequence[Sequence[Hashable]],
    clusters: Sequence[Hashable] | None = None,
    level: float = DEFAULT_LEVEL,
    reps: int = DEFAULT_REPS,
    seed: int = DEFAULT_SEED,
) -> Kappa:
    """Fleiss' kappa of several raters with a bootstrap interval.

    Every unit must have the same number of ratings (``>= 2``); which rater gave
    which does not matter. The interval is the percentile interval of kappa
    over resamples of units (or of whole clusters, e.g. questions, when
    ``clusters`` is given), with a fixed seed; resamples where kappa is
    undefined are left out.

    Args:
        ratings: Per unit, the category each rater gave.
        clusters: Optional cluster per unit to resample whole clusters.
        level: The confidence level.
        reps: Bootstrap resamples.
        seed: The bootstrap's seed.

    Raises:
        StatisticsError: no units, units with different numbers of ratings or
            fewer than two, or ``clusters`` not one per unit.
    """
    if not ratings:
        raise StatisticsError("no units rated")
    raters = len(ratings[0])
    if raters < 2 or any(len(unit) != raters for unit in ratings):
        raise StatisticsError(
            "Fleiss' kappa needs the same number (>= 2) of ratings for every unit"
        )
    if clusters is not None and len(clusters) != len(ratings):
        raise StatisticsError(f"{len(ratings)} units but {len(clusters)} cluster labels")
    index = _categories(*ratings)
    counts = np.zeros((len(ratings), len(index)))
    for row, unit in enumerate(ratings):
        for value in unit:
            counts[row, index[value]] += 1
    kappa, observed, expected = _fleiss_from_counts(counts)
    if kappa is None:
        return Kappa(None, None, None, None, len(ratings), raters, observed, expected,
                     "fleiss-bootstrap", level)  # fmt: skip
    labels = list(clusters) if clusters is not None else list(range(len(ratings)))
    groups: dict[Hashable, list[int]] = {}
    for row, label in enumerate(labels):
        groups.setdefault(label, []).append(row)
    members = list(groups.values())
    rng = np.random.default_rng(seed)
    values: list[float] = []
    for _ in range(reps):
        picks = rng.integers(0, len(members), size=len(members))
        rows = [r for g in picks for r in members[g]]
        value, _, _ = _fleiss_from_counts(counts[rows])
        if value is not None:
            values.append(value)
    if len(values) < 2:
        return Kappa(kappa, None, None, None, len(ratings), raters, observed, expected,
                     "fleiss-bootstrap", level)  # fmt: skip
    alpha = (1 - level) / 2
    low, high = np.quantile(values, [alpha, 1 - alpha])
    return Kappa(
        kappa,
        float(low),
        float(high),
        float(np.std(values, ddof=1)),
        len(ratings),
        raters,
        observed,
        expected,
        "fleiss-bootstrap",
        level,
    )


@dataclass(frozen=True)
class Classification:
    """A judge's verdicts against human labels (``pass`` is the positive class).

    Attributes:
        n: Labelled results with a verdict.
        true_pass: Judge passed, human says right.
        false_pass: Judge passed, human says wrong.
        true_fail: Judge failed, human says wrong.
        false_fail: Judge failed, human says right.
        accuracy: Share of verdicts the human agrees with (Wilson interval).
        precision: Of the judge's passes, the share the human calls right
            (None when the judge passed nothing).
        recall: Of the results the human calls right, the share the judge
            passed (None when the human called nothing right).
        specificity: Of the results the human calls wrong, the share the
            judge failed (None when the human called nothing wrong).
    """

    n: int
    true_pass: int
    false_pass: int
    true_fail: int
    false_fail: int
    accuracy: Interval
    precision: Interval | None
    recall: Interval | None
    specificity: Interval | None

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dict (intervals as nested dicts)."""
        out: dict[str, object] = {
            "n": self.n,
            "true_pass": self.true_pass,
            "false_pass": self.false_pass,
            "true_fail": self.true_fail,
            "false_fail": self.false_fail,
        }
        for name in ("accuracy", "precision", "recall", "specificity"):
            value = getattr(self, name)
            out[name] = value.as_dict() if value is not None else None
        return out


def classification(
    predicted: Sequence[bool], truth: Sequence[bool], level: float = DEFAULT_LEVEL
) -> Classification:
    """A judge's accuracy, precision, recall and specificity against labels.

    Each figure is a proportion with its Wilson interval; the intervals treat
    labelled results as independent.

    Args:
        predicted: The judge's verdict per labelled result (True = passed).
        truth: The human label per result (True = the answer is right).
        level: The confidence level.

    Raises:
        StatisticsError: the sequences differ in length or are empty.
    """
    if len(predicted) != len(truth):
        raise StatisticsError(f"{len(predicted)} verdicts but {len(truth)} labels")
    if not predicted:
        raise StatisticsError("no labelled result has a verdict")
    pairs = list(zip(predicted, truth, strict=True))
    tp = sum(1 for p, t in pairs if p and t)
    fp = sum(1 for p, t in pairs if p and not t)
    tn = sum(1 for p, t in pairs if not p and not t)
    fn = sum(1 for p, t in pairs if not p and t)
    return Classification(
        n=len(pairs),
        true_pass=tp,
        false_pass=fp,
        true_fail=tn,
        false_fail=fn,
        accuracy=wilson(tp + tn, len(pairs), level),
        precision=wilson(tp, tp + fp, level) if tp + fp else None,
        recall=wilson(tp, tp + fn, level) if tp + fn else None,
        specificity=wilson(tn, tn + fp, level) if tn + fp else None,
    )
