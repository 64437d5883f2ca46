"""Pass rates per (answering, parsing) model pair, counted as results arrive."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from rich.table import Table

from verifleet.errors import StatisticsError
from verifleet.results.stats import Interval, clustered_mean_from_sums, rate_interval_from_sums
from verifleet.schemas import ScenarioExecutionResult, VerificationResult, result_trait_scores

__all__ = ["PairCounts", "PassRateTally", "ScenarioTally", "TraitTally"]


@dataclass
class PairCounts:
    """Counts of one (answering, parsing) pair.

    ``by_question`` keeps, per question, [passed, judged]: what the clustered
    interval needs (replicates of one question are not independent).
    """

    results: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    by_question: dict[str, list[int]] = field(default_factory=dict)

    def interval(self) -> Interval | None:
        """The pass rate's 95 % interval with questions as clusters (Wilson's
        when no question has more than one verdict); None without verdicts."""
        judged = [(p, n) for p, n in self.by_question.values() if n]
        if not judged:
            return None
        # The viewer and the report call the same function on the same counts.
        return rate_interval_from_sums([p for p, _ in judged], [n for _, n in judged])

    @property
    def pass_rate(self) -> float | None:
        """Passed over verified results (errors and unverified excluded)."""
        judged = self.passed + self.failed
        return self.passed / judged if judged else None


class PassRateTally:
    """Streaming tally: memory grows with model pairs times questions (two
    counts each), not with results."""

    def __init__(self) -> None:
        self.pairs: dict[tuple[str, str], PairCounts] = defaultdict(PairCounts)

    def add(self, result: VerificationResult) -> None:
        """Count one result."""
        meta = result.metadata
        counts = self.pairs[(meta.answering.display_string, meta.parsing.display_string)]
        counts.results += 1
        if not meta.completed_without_errors:
            counts.errors += 1
        verdict = result.template.verify_result if result.template is not None else None
        if verdict is True:
            counts.passed += 1
        elif verdict is False:
            counts.failed += 1
        if isinstance(verdict, bool):
            question = counts.by_question.setdefault(meta.question_id, [0, 0])
            question[0] += verdict
            question[1] += 1

    @property
    def total_errors(self) -> int:
        """Results that did not complete without errors."""
        return sum(c.errors for c in self.pairs.values())

    def table(self, title: str = "Pass rate per answering × parsing model") -> Table:
        """A rich table with one row per model pair."""
        table = Table(title=title)
        for name in ("answering", "parsing", "results", "passed", "failed", "errors"):
            if name in ("answering", "parsing"):
                table.add_column(name, overflow="fold")
            else:
                table.add_column(name, justify="right", no_wrap=True)
        table.add_column("pass rate", justify="right", no_wrap=True)
        # Questions are the clusters: see docs/results.md.
        table.add_column("95% CI", justify="right", no_wrap=True)
        for (answering, parsing), c in sorted(self.pairs.items()):
            rate = "n/a" if c.pass_rate is None else f"{c.pass_rate:.1%}"
            interval = c.interval()
            ci = "n/a" if interval is None else f"{interval.low:.1%}-{interval.high:.1%}"
            table.add_row(
                answering,
                parsing,
                str(c.results),
                str(c.passed),
                str(c.failed),
                str(c.errors),
                rate,
                ci,
            )
        return table


class TraitTally:
    """Streaming mean of every numeric rubric score per (answering model, trait):
    per question a [sum, count], what the clustered interval needs (the same
    scores and interval as the viewer's rubric heat map)."""

    def __init__(self) -> None:
        self.cells: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(dict)

    def add(self, result: VerificationResult) -> None:
        """Count one result's trait scores (none when its rubric did not run)."""
        meta = result.metadata
        for name, _kind, score in result_trait_scores(result.rubric):
            cell = self.cells[(meta.answering.display_string, name)]
            question = cell.setdefault(meta.question_id, [0.0, 0.0])
            question[0] += score
            question[1] += 1

    def table(self, title: str = "Rubric trait means per answering model") -> Table | None:
        """A rich table with one row per (answering model, trait); None without scores."""
        if not self.cells:
            return None
        table = Table(title=title)
        table.add_column("answering", overflow="fold")
        table.add_column("trait", overflow="fold")
        for name in ("scores", "mean", "95% CI"):
            table.add_column(name, justify="right", no_wrap=True)
        for (answering, trait), questions in sorted(self.cells.items()):
            sums = [s for s, _ in questions.values()]
            counts = [n for _, n in questions.values()]
            mean = sum(sums) / sum(counts)
            try:
                interval = clustered_mean_from_sums(sums, counts)
                ci = f"{interval.low:.3g}-{interval.high:.3g}"
            except StatisticsError:  # one question: no interval
                ci = "n/a"
            table.add_row(answering, trait, str(int(sum(counts))), f"{mean:.3g}", ci)
        return table


class ScenarioTally:
    """Scenario runs by status and by outcome, counted as they finish."""

    def __init__(self) -> None:
        self.runs = 0
        self.by_status: dict[str, int] = defaultdict(int)
        self.outcomes_passed = 0
        self.errors: list[str] = []

    def add(self, run: ScenarioExecutionResult) -> None:
        """Count one finished run; a failed one is remembered for the summary."""
        self.runs += 1
        self.by_status[run.status] += 1
        # A run whose criteria never ran (a broken scenario's) passed nothing:
        # only runs with evaluated outcomes count.
        if run.outcome_results and run.outcomes_passed:
            self.outcomes_passed += 1
        entry = run.error()
        if entry is not None:
            self.errors.append(f"{entry[0]}: {entry[1]}")

    def table(self, title: str = "Scenario runs") -> Table:
        """A rich table: runs per status and runs whose outcome criteria were
        evaluated and all held."""
        table = Table(title=title)
        names = ("runs", "completed", "limit_reached", "timeout", "error", "outcomes passed")
        for name in names:
            table.add_column(name, justify="right", no_wrap=True)
        table.add_row(
            str(self.runs),
            *(str(self.by_status.get(s, 0)) for s in names[1:5]),
            str(self.outcomes_passed),
        )
        return table
