"""Replicate statistics: pass@k, pass^k, per-question consistency, flaky questions.

A question answered ``n`` times (replicates) that passed ``c`` times says how
stable a model is on it. pass@k is the chance that at least one of ``k``
attempts passes, pass^k that all ``k`` do; both are estimated without bias from
``n >= k`` replicates by counting subsets (Chen et al. 2021 for pass@k; the
same counting for pass^k), not by ``1 - (1 - p)^k``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from math import comb

from verifleet.errors import StatisticsError

__all__ = [
    "QuestionConsistency",
    "ReplicateStats",
    "pass_at_k",
    "pass_hat_k",
    "replicate_stats",
]


def _check(n: int, c: int, k: int) -> None:
    if n < 1 or not 0 <= c <= n:
        raise StatisticsError(f"need n >= 1 and 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise StatisticsError(f"k must be between 1 and the replicates ({n}), got {k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one question: ``1 - C(n - c, k) / C(n, k)``.

    The chance that ``k`` replicates drawn without replacement from the ``n``
    include at least one pass.

    Raises:
        StatisticsError: ``k`` outside 1..n or ``c`` outside 0..n.
    """
    _check(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k of one question: ``C(c, k) / C(n, k)``.

    The chance that ``k`` replicates drawn without replacement all pass: how
    reliably a model passes, not whether it can.

    Raises:
        StatisticsError: ``k`` outside 1..n or ``c`` outside 0..n.
    """
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


@dataclass(frozen=True)
class QuestionConsistency:
    """One question's replicates.

    Attributes:
        key: The question (or (question, model)) the replicates belong to.
        replicates: Verdicts counted (``n``).
        passed: Of them passed (``c``).
        rate: ``c / n``.
        consistency: The share agreeing with the majority verdict,
            ``max(c, n - c) / n`` (1.0: every replicate agrees).
    """

    key: Hashable
    replicates: int
    passed: int
    rate: float
    consistency: float

    @property
    def flaky(self) -> bool:
        """Some replicates passed and some failed."""
        return 0 < self.passed < self.replicates


@dataclass(frozen=True)
class ReplicateStats:
    """Replicate statistics over questions.

    Attributes:
        k: The ``k`` of pass@k and pass^k.
        questions: Questions with at least one verdict.
        questions_with_k: Of them, those with at least ``k`` replicates (the
            ones pass@k and pass^k average over).
        pass_at_k: Mean pass@k over ``questions_with_k`` (None if there are none).
        pass_hat_k: Mean pass^k over the same questions.
        consistency: Mean per-question consistency.
        flaky: Questions with both passes and failures.
        flakiest: Up to ``top`` flaky questions, the closest to a coin toss first.
    """

    k: int
    questions: int
    questions_with_k: int
    pass_at_k: float | None
    pass_hat_k: float | None
    consistency: float
    flaky: int
    flakiest: list[QuestionConsistency]

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dict; question keys become strings."""
        return {
            "k": self.k,
            "questions": self.questions,
            "questions_with_k": self.questions_with_k,
            "pass_at_k": self.pass_at_k,
            "pass_hat_k": self.pass_hat_k,
            "consistency": self.consistency,
            "flaky": self.flaky,
            "flakiest": [
                {
                    "key": q.key if isinstance(q.key, str) else repr(q.key),
                    "replicates": q.replicates,
                    "passed": q.passed,
                    "rate": q.rate,
                    "consistency": q.consistency,
                }
                for q in self.flakiest
            ],
        }


def replicate_stats(
    verdicts: Mapping[Hashable, Sequence[bool]], k: int = 1, top: int = 10
) -> ReplicateStats:
    """Replicate statistics of verdicts grouped by question.

    Args:
        verdicts: Each question's replicate verdicts (True = passed).
        k: The ``k`` of pass@k / pass^k; questions with fewer replicates are
            left out of those two means (counted in ``questions_with_k``).
        top: How many flaky questions to list.

    Raises:
        StatisticsError: no question has a verdict, or ``k < 1``.
    """
    if k < 1:
        raise StatisticsError(f"k must be >= 1, got {k}")
    rows = [
        QuestionConsistency(
            key,
            len(v),
            sum(1 for x in v if x),
            sum(1 for x in v if x) / len(v),
            max(sum(1 for x in v if x), sum(1 for x in v if not x)) / len(v),
        )
        for key, v in verdicts.items()
        if len(v) > 0
    ]
    if not rows:
        raise StatisticsError("no question has a verdict")
    usable = [q for q in rows if q.replicates >= k]
    at_k = [pass_at_k(q.replicates, q.passed, k) for q in usable]
    hat_k = [pass_hat_k(q.replicates, q.passed, k) for q in usable]
    flaky = [q for q in rows if q.flaky]
    # Closest to a coin toss first; ties by fewer replicates agreeing, then by key.
    flaky.sort(key=lambda q: (abs(q.rate - 0.5), q.consistency, str(q.key)))
    return ReplicateStats(
        k=k,
        questions=len(rows),
        questions_with_k=len(usable),
        pass_at_k=sum(at_k) / len(at_k) if at_k else None,
        pass_hat_k=sum(hat_k) / len(hat_k) if hat_k else None,
        consistency=sum(q.consistency for q in rows) / len(rows),
        flaky=len(flaky),
        flakiest=flaky[:top],
    )
