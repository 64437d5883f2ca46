"""Which stored results are stale: their fingerprint differs from the one the
benchmark and configuration given would give them now.

A unit (question, answering model, replicate) is stale when one of its results
is, or when the configuration has a judge that has not judged it; its results
are then re-judged together (``reverify --stale``). The parts that decide a
verdict are compared: question, template, rubric, judge and settings. A changed
``answering`` part (the answering model's parameters or prompts) cannot be
fixed by judging again, and a changed ``version`` alone does not make a result
stale: both are counted, not acted on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from verifleet.pipeline import answering_model_of, group_stored
from verifleet.schemas import (
    Benchmark,
    ModelConfig,
    VerificationConfig,
    VerificationResult,
    compute_fingerprint,
)

__all__ = ["JUDGED_PARTS", "StaleReport", "find_stale"]

JUDGED_PARTS: tuple[str, ...] = ("question", "template", "rubric", "judge", "settings")
"""The fingerprint parts whose change makes a result stale."""


@dataclass
class StaleReport:
    """Stored results split into stale and fresh ones.

    Attributes:
        stale: Results of stale units (to re-judge).
        fresh: Results of fresh units (kept as they are).
        stale_units: Stale units.
        fresh_units: Fresh units.
        by_part: Per reason, the results of the units stale for it (a unit
            may be stale for several): a fingerprint part, ``unrecorded`` (a
            result written without a fingerprint) or ``new judge`` (a
            configured judge has not judged the unit).
        answering_changed: Results whose answering part differs (not fixed
            by re-judging: the answers are reused).
        version_changed: Results written by another verifleet version.
        missing_questions: Stored question ids the benchmark no longer has
            (left out of both lists).
    """

    stale: list[VerificationResult] = field(default_factory=list)
    fresh: list[VerificationResult] = field(default_factory=list)
    stale_units: int = 0
    fresh_units: int = 0
    by_part: Counter[str] = field(default_factory=Counter)
    answering_changed: int = 0
    version_changed: int = 0
    missing_questions: set[str] = field(default_factory=set)

    def summary(self) -> str:
        """One line saying how many units are stale and why."""
        why = ", ".join(f"{part}: {n}" for part, n in sorted(self.by_part.items()))
        text = (
            f"{self.stale_units} of {self.stale_units + self.fresh_units} units stale "
            f"({len(self.stale)} results; {why or 'nothing changed'})"
        )
        if self.answering_changed:
            text += (
                f"; {self.answering_changed} results' answering model or prompts changed, "
                "which re-judging cannot fix (run again to get new answers)"
            )
        if self.version_changed:
            text += f"; {self.version_changed} results come from another verifleet version"
        return text


def find_stale(
    stored: Iterable[VerificationResult], benchmark: Benchmark, config: VerificationConfig
) -> StaleReport:
    """Split ``stored`` by whether re-judging under ``benchmark`` and ``config``
    would use different inputs than the ones recorded in each fingerprint.

    Scenario turns are left out (``reverify`` does not re-judge them by part).
    """
    report = StaleReport()
    questions = {q.id: q for q in benchmark.questions}
    answering: dict[str, ModelConfig] = {
        m.identity().canonical_key: m for m in config.answering_models
    }
    judges: dict[str, ModelConfig] = {
        m.identity(role="parsing").canonical_key: m for m in config.parsing_models
    }
    for (question_id, answering_key, _replicate), results in group_stored(stored).items():
        question = questions.get(question_id)
        if question is None:
            report.missing_questions.add(question_id)
            continue
        rubric = benchmark.rubric_for(question)
        dynamic = benchmark.dynamic_rubric_for(question)
        reasons: set[str] = set()
        for result in results:
            meta = result.metadata
            model = answering.get(answering_key) or answering_model_of(
                meta.answering, meta.answering_system_prompt
            )
            judge = judges.get(meta.parsing.canonical_key)
            if meta.fingerprint is None:
                reasons.add("unrecorded")
                continue
            if judge is None:
                reasons.add("judge")
                continue
            expected = compute_fingerprint(
                question, model, judge, config, rubric=rubric, dynamic_rubric=dynamic
            )
            changed = meta.fingerprint.changed_parts(expected)
            reasons.update(part for part in changed if part in JUDGED_PARTS)
            report.answering_changed += "answering" in changed and answering_key in answering
            report.version_changed += "version" in changed
        judged = {r.metadata.parsing.canonical_key for r in results}
        if set(judges) - judged:
            reasons.add("new judge")
        if reasons:
            report.stale.extend(results)
            report.stale_units += 1
            report.by_part.update({part: len(results) for part in reasons})
        else:
            report.fresh.extend(results)
            report.fresh_units += 1
    return report
