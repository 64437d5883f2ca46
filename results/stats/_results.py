"""Statistics over verification results: the bridge from result lists to the
pure functions of this package (paired comparison with flips explained, judge
agreement, judges against human labels).

A *verdict* is ``template.verify_result`` when it is a boolean; results without
one (errors, rubric-only runs) take no part. Questions are the clusters.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from verifleet.errors import StatisticsError
from verifleet.schemas import VerificationResult

from ._agreement import Classification, Kappa, classification, cohen_kappa, fleiss_kappa
from ._core import DEFAULT_LEVEL
from ._paired import PairedComparison, paired_comparison

__all__ = [
    "ComparisonReport",
    "Disagreement",
    "Flip",
    "JudgeReport",
    "UnitKey",
    "compare_models",
    "compare_runs",
    "explain_flip",
    "judge_report",
    "unit_key",
    "verdict",
]

#: (question id, answering model canonical key, replicate): one answer.
UnitKey = tuple[str, str, int | None]


class Disagreement(TypedDict):
    """A unit on which the judges' verdicts differ (:class:`JudgeReport`)."""

    question_id: str
    answering: str
    replicate: int | None
    verdicts: dict[str, bool]


def verdict(result: VerificationResult) -> bool | None:
    """The result's pass/fail verdict, or None when it has none."""
    template = result.template
    value = template.verify_result if template is not None else None
    return value if isinstance(value, bool) else None


def unit_key(result: VerificationResult) -> UnitKey:
    """The answer a result judges: question, answering model, replicate."""
    meta = result.metadata
    return (meta.question_id, meta.answering.canonical_key, meta.replicate)


def _answer_text(result: VerificationResult) -> str | None:
    return result.template.raw_llm_response if result.template is not None else None


def explain_flip(a: VerificationResult, b: VerificationResult) -> list[str]:
    """What changed between two results of one unit and judge, from their
    fingerprints and answers: fingerprint parts (``template``, ``judge``,
    ``rubric``, ``settings``, ``question``, ``answering``), ``answer`` when the
    answer text differs, ``unrecorded`` when a side has no fingerprint, and
    ``nothing recorded`` when every input is the same (the judge or a check
    decided differently on identical inputs)."""
    reasons: list[str] = []
    fa, fb = a.metadata.fingerprint, b.metadata.fingerprint
    if fa is None or fb is None:
        reasons.append("unrecorded")
    else:
        reasons.extend(p for p in fa.changed_parts(fb) if p != "version")
    if _answer_text(a) != _answer_text(b):
        reasons.append("answer")
    return reasons or ["nothing recorded"]


@dataclass(frozen=True)
class Flip:
    """One pair whose verdict differs between the two sides."""

    question_id: str
    answering: str
    parsing: str
    replicate: int | None
    before: bool
    after: bool
    reasons: list[str]

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "question_id": self.question_id,
            "answering": self.answering,
            "parsing": self.parsing,
            "replicate": self.replicate,
            "before": self.before,
            "after": self.after,
            "reasons": self.reasons,
        }


@dataclass
class ComparisonReport:
    """A paired comparison overall and per group, with every flip explained.

    Attributes:
        label_a: What side A is (a run's name or a model).
        label_b: What side B is.
        overall: The comparison over every pair (None when nothing pairs).
        groups: Per answering model (runs) or per judge (models in one run).
        flips: Every pair whose verdict changed, with its reasons.
        reasons: How many flips each reason explains (a flip may have several).
        only_a: Results with a verdict in A that have no partner in B.
        only_b: The same for B.
    """

    label_a: str
    label_b: str
    overall: PairedComparison | None
    groups: dict[str, PairedComparison] = field(default_factory=dict)
    flips: list[Flip] = field(default_factory=list)
    reasons: dict[str, int] = field(default_factory=dict)
    only_a: int = 0
    only_b: int = 0

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dict of everything above."""
        return {
            "a": self.label_a,
            "b": self.label_b,
            "overall": self.overall.as_dict() if self.overall else None,
            "groups": {name: c.as_dict() for name, c in self.groups.items()},
            "flip_reasons": self.reasons,
            "flips": [f.as_dict() for f in self.flips],
            "only_a": self.only_a,
            "only_b": self.only_b,
        }


def _paired(
    pairs: Sequence[tuple[VerificationResult, VerificationResult]], level: float
) -> PairedComparison:
    return paired_comparison(
        [verdict(a) is True for a, _ in pairs],
        [verdict(b) is True for _, b in pairs],
        [a.metadata.question_id for a, _ in pairs],
        level=level,
    )


def _report(
    label_a: str,
    label_b: str,
    side_a: Mapping[object, VerificationResult],
    side_b: Mapping[object, VerificationResult],
    group_of: Callable[[tuple[VerificationResult, VerificationResult]], str],
    level: float,
) -> ComparisonReport:
    """The comparison of the pairs whose keys are on both sides (in key order)."""
    keys = sorted(side_a.keys() & side_b.keys(), key=str)
    pairs = [(side_a[k], side_b[k]) for k in keys]
    report = ComparisonReport(label_a, label_b, _paired(pairs, level) if pairs else None)
    report.only_a, report.only_b = len(side_a) - len(keys), len(side_b) - len(keys)
    grouped: dict[str, list[tuple[VerificationResult, VerificationResult]]] = defaultdict(list)
    for pair in pairs:
        grouped[group_of(pair)].append(pair)
    report.groups = {name: _paired(group, level) for name, group in sorted(grouped.items())}
    counts: dict[str, int] = defaultdict(int)
    for a, b in pairs:
        if verdict(a) == verdict(b):
            continue
        reasons = explain_flip(a, b)
        for reason in reasons:
            counts[reason] += 1
        meta = a.metadata
        report.flips.append(
            Flip(
                meta.question_id,
                meta.answering_model,
                meta.parsing_model,
                meta.replicate,
                verdict(a) is True,
                verdict(b) is True,
                reasons,
            )
        )
    report.reasons = dict(sorted(counts.items()))
    return report


def compare_runs(
    a: Iterable[VerificationResult],
    b: Iterable[VerificationResult],
    *,
    label_a: str = "A",
    label_b: str = "B",
    level: float = DEFAULT_LEVEL,
) -> ComparisonReport:
    """Compare two runs pair by pair: the same question, answering model,
    judge and replicate with a verdict on both sides; grouped per answering model.

    Raises:
        StatisticsError: a run holds two results of the same pair.
    """
    side_a = _by_key(a, lambda r: (*unit_key(r), r.metadata.parsing.canonical_key), label_a)
    side_b = _by_key(b, lambda r: (*unit_key(r), r.metadata.parsing.canonical_key), label_b)
    return _report(
        label_a, label_b, side_a, side_b, lambda pair: pair[0].metadata.answering_model, level
    )


def compare_models(
    results: Iterable[VerificationResult],
    model_a: str,
    model_b: str,
    *,
    level: float = DEFAULT_LEVEL,
) -> ComparisonReport:
    """Compare two answering models of one run on the questions both answered:
    pairs are (question, judge, replicate); grouped per judge. A model is named
    by its display string (``interface:model_name``) or its model name.

    Raises:
        StatisticsError: a model is not in the results, or a pair repeats.
    """
    pool = list(results)

    def pick(name: str) -> list[VerificationResult]:
        chosen = [
            r for r in pool if name in (r.metadata.answering_model, r.metadata.answering.model_name)
        ]
        if not chosen:
            known = sorted({r.metadata.answering_model for r in pool})
            raise StatisticsError(f"no answering model {name!r} in the results (they have {known})")
        return chosen

    def key(r: VerificationResult) -> tuple[object, ...]:
        meta = r.metadata
        return (meta.question_id, meta.parsing.canonical_key, meta.replicate)

    side_a = _by_key(pick(model_a), key, model_a)
    side_b = _by_key(pick(model_b), key, model_b)
    return _report(
        model_a, model_b, side_a, side_b, lambda pair: pair[0].metadata.parsing_model, level
    )


def _by_key(
    results: Iterable[VerificationResult],
    key: Callable[[VerificationResult], object],
    label: str,
) -> dict[object, VerificationResult]:
    out: dict[object, VerificationResult] = {}
    for result in results:
        if verdict(result) is None or result.metadata.scenario_id is not None:
            continue
        k = key(result)
        if k in out:
            raise StatisticsError(
                f"{label} holds two results of {k}: compare runs with one result per pair"
            )
        out[k] = result
    return out


@dataclass
class JudgeReport:
    """How far judges agree with each other and with human labels.

    Attributes:
        judges: The judges (parsing models' display strings).
        units: Units judged by every judge with a verdict.
        pairwise: Cohen's kappa for each pair of judges (``"A | B"``).
        fleiss: Fleiss' kappa over all judges (with three or more).
        disagreements: Units where the judges' verdicts differ.
        against_labels: Each judge's figures against the human labels.
        labelled: Labelled units that have a judge's verdict.
    """

    judges: list[str]
    units: int
    pairwise: dict[str, Kappa]
    fleiss: Kappa | None
    disagreements: list[Disagreement]
    against_labels: dict[str, Classification]
    labelled: int

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dict of everything above."""
        return {
            "judges": self.judges,
            "units": self.units,
            "pairwise": {k: v.as_dict() for k, v in self.pairwise.items()},
            "fleiss": self.fleiss.as_dict() if self.fleiss else None,
            "disagreements": self.disagreements,
            "against_labels": {k: v.as_dict() for k, v in self.against_labels.items()},
            "labelled": self.labelled,
        }


def judge_report(
    results: Iterable[VerificationResult],
    labels: Mapping[UnitKey, bool] | None = None,
    *,
    level: float = DEFAULT_LEVEL,
) -> JudgeReport:
    """Agreement between the judges of the same units, and each judge against
    human labels (keyed by :func:`unit_key`: a label says whether the *answer*
    is right, so it holds for every judge of the unit and survives re-judging).

    Raises:
        StatisticsError: no result has a verdict.
    """
    by_unit: dict[UnitKey, dict[str, bool]] = defaultdict(dict)
    for result in results:
        v = verdict(result)
        if v is not None and result.metadata.scenario_id is None:
            by_unit[unit_key(result)][result.metadata.parsing_model] = v
    if not by_unit:
        raise StatisticsError("no result has a verdict")
    judges = sorted({j for verdicts in by_unit.values() for j in verdicts})
    complete = {k: v for k, v in by_unit.items() if len(v) == len(judges)}
    pairwise: dict[str, Kappa] = {}
    fleiss = None
    if len(judges) >= 2 and complete:
        units = sorted(complete)
        for i, first in enumerate(judges):
            for second in judges[i + 1 :]:
                pairwise[f"{first} | {second}"] = cohen_kappa(
                    [complete[u][first] for u in units], [complete[u][second] for u in units], level
                )
        if len(judges) >= 3:
            fleiss = fleiss_kappa(
                [[complete[u][j] for j in judges] for u in units],
                clusters=[u[0] for u in units],
                level=level,
            )
    disagreements: list[Disagreement] = [
        Disagreement(question_id=k[0], answering=k[1], replicate=k[2], verdicts=v)
        for k, v in sorted(complete.items(), key=lambda item: str(item[0]))
        if len(set(v.values())) > 1
    ]
    against: dict[str, Classification] = {}
    labelled = 0
    if labels:
        for judge in judges:
            keys = [k for k in sorted(labels, key=str) if judge in by_unit.get(k, {})]
            labelled = max(labelled, len(keys))
            if keys:
                against[judge] = classification(
                    [by_unit[k][judge] for k in keys], [labels[k] for k in keys], level
                )
    return JudgeReport(judges, len(complete), pairwise, fleiss, disagreements, against, labelled)
