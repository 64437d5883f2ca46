"""``verifleet compare`` and ``verifleet judges``: is B better than A or is it
noise, what made each verdict flip, and can the judges be trusted
(docs/results.md explains every figure)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from verifleet.results.stats import ComparisonReport, Interval, JudgeReport
    from verifleet.schemas import VerificationResult

__all__ = ["register"]

_COMPARE_EPILOG = """\
examples:
  verifleet compare before.parquet after.parquet          # per answering model and overall
  verifleet compare before.parquet after.parquet --json   # the same figures for programs
  verifleet compare run.parquet --models openai:gpt-4.1-mini openai:gpt-4.1   # two models, one run
"""

_JUDGES_EPILOG = """\
examples:
  verifleet judges results.parquet                        # agreement between the judges
  verifleet judges results.parquet --labels mine.labels.jsonl --json
"""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``compare`` and ``judges`` sub-commands."""
    compare = commands.add_parser(
        "compare",
        description=(
            "Pair the results of A and B on (question, answering model, judge, "
            "replicate) and give, per answering model and overall, both pass rates, "
            "the paired difference B - A with a confidence interval that treats "
            "questions as clusters, McNemar's exact p-value, and every flip with "
            "what its fingerprints say changed. With --models, compare two answering "
            "models of one run on (question, judge, replicate) instead."
        ),
        epilog=_COMPARE_EPILOG,
    )
    compare.add_argument("a", type=Path, help="results file A (the baseline)")
    compare.add_argument("b", type=Path, nargs="?", help="results file B (omit with --models)")
    compare.add_argument(
        "--models", nargs=2, metavar=("MODEL_A", "MODEL_B"), help="two answering models of A"
    )
    compare.add_argument("--level", type=float, default=0.95, help="confidence level (0.95)")
    compare.add_argument("--json", action="store_true", help="print the figures as JSON")
    compare.add_argument("--flips", type=int, default=20, help="flips listed in text (20)")
    compare.set_defaults(handler=_compare)
    judges = commands.add_parser(
        "judges",
        description=(
            "Cohen's kappa for every pair of judges of the same answers, Fleiss' kappa "
            "with three or more, the answers they disagree on, and with human labels "
            "(default: RESULTS.labels.jsonl) each judge's accuracy, precision and "
            "recall, all with confidence intervals."
        ),
        epilog=_JUDGES_EPILOG,
    )
    judges.add_argument("results", type=Path, help="a results file")
    judges.add_argument("--labels", type=Path, help="a labels file (JSON Lines)")
    judges.add_argument("--level", type=float, default=0.95, help="confidence level (0.95)")
    judges.add_argument("--json", action="store_true", help="print the figures as JSON")
    judges.set_defaults(handler=_judges)


def _read(path: Path) -> list[VerificationResult]:
    from verifleet.orchestrator import read_results
    from verifleet.schemas import ConfigError

    if not path.is_file():
        raise ConfigError(f"{path}: no such results file")
    return list(read_results(path))


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _ci(interval: Interval | None) -> str:
    if interval is None:
        return "n/a (one question)"
    return f"[{100 * interval.low:+.1f}, {100 * interval.high:+.1f}] pp"


def _print_comparison(report: ComparisonReport, flips: int, level: float) -> None:
    print(f"A: {report.label_a}\nB: {report.label_b}")
    head = (
        f"{'':32} {'pairs':>6} {'quest.':>6} {'A':>7} {'B':>7} {'B-A':>8}  "
        f"{f'{level:.0%} CI (clustered)':<24} {'McNemar p':>9} {'A only':>6} {'B only':>6}"
    )
    print(head)
    rows = [("overall", report.overall), *report.groups.items()]
    for name, c in rows:
        if c is None:
            continue
        diff = c.rate_b - c.rate_a
        print(
            f"{name[:32]:32} {c.pairs:>6} {c.clusters:>6} {_pct(c.rate_a):>7} "
            f"{_pct(c.rate_b):>7} {100 * diff:>+7.1f}pp  {_ci(c.difference):<24} "
            f"{c.mcnemar_p:>9.3g} {c.a_only:>6} {c.b_only:>6}"
        )
    if report.only_a or report.only_b:
        print(f"unpaired: {report.only_a} in A only, {report.only_b} in B only (left out)")
    why = ", ".join(f"{reason}: {n}" for reason, n in report.reasons.items())
    print(f"flips: {len(report.flips)}" + (f" ({why})" if why else ""))
    for flip in report.flips[:flips]:
        arrow = f"{'pass' if flip.before else 'fail'} -> {'pass' if flip.after else 'fail'}"
        print(
            f"  {flip.question_id} {flip.answering} / {flip.parsing} r{flip.replicate}: "
            f"{arrow} ({', '.join(flip.reasons)})"
        )
    if len(report.flips) > flips:
        print(f"  ... {len(report.flips) - flips} more (--flips N, or --json)")


def _compare(args: argparse.Namespace) -> int:
    from verifleet.results.stats import compare_models, compare_runs
    from verifleet.schemas import ConfigError

    if args.models and args.b is not None:
        raise ConfigError("--models compares two models of one run: give one results file")
    if not args.models and args.b is None:
        raise ConfigError("give two results files, or one and --models MODEL_A MODEL_B")
    if args.models:
        report = compare_models(_read(args.a), *args.models, level=args.level)
    else:
        report = compare_runs(
            _read(args.a), _read(args.b), label_a=str(args.a), label_b=str(args.b), level=args.level
        )
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        _print_comparison(report, args.flips, args.level)
    return 0


def _print_judges(report: JudgeReport) -> None:
    print(f"judges: {', '.join(report.judges)}; answers judged by all: {report.units}")
    for pair, kappa in report.pairwise.items():
        shown = (
            "undefined (every verdict the same)"
            if kappa.kappa is None
            else (f"{kappa.kappa:.3f} [{kappa.low:.3f}, {kappa.high:.3f}]")
        )
        print(f"Cohen's kappa {pair}: {shown}; observed agreement {_pct(kappa.observed)}")
    if report.fleiss is not None:
        f = report.fleiss
        shown = "undefined" if f.kappa is None else f"{f.kappa:.3f}"
        if f.low is not None and f.high is not None:
            shown += f" [{f.low:.3f}, {f.high:.3f}]"
        print(f"Fleiss' kappa ({f.raters} judges): {shown}")
    print(f"disagreements: {len(report.disagreements)}")
    for item in report.disagreements[:20]:
        verdicts = ", ".join(f"{j}={'pass' if v else 'fail'}" for j, v in item["verdicts"].items())
        print(f"  {item['question_id']} r{item['replicate']}: {verdicts}")
    if not report.against_labels:
        print("no human labels (label results in `verifleet view`, or pass --labels FILE)")
    for judge, c in report.against_labels.items():
        parts = [
            f"accuracy {_pct(c.accuracy.estimate)} [{_pct(c.accuracy.low)}, {_pct(c.accuracy.high)}]"
        ]
        for name in ("precision", "recall"):
            value = getattr(c, name)
            if value is not None:
                parts.append(
                    f"{name} {_pct(value.estimate)} [{_pct(value.low)}, {_pct(value.high)}]"
                )
        print(f"{judge} vs {c.n} labels: " + "; ".join(parts))


def _judges(args: argparse.Namespace) -> int:
    from verifleet.results.stats import judge_report, labels_path, read_labels

    labels = read_labels(args.labels or labels_path(args.results))
    report = judge_report(_read(args.results), labels, level=args.level)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        _print_judges(report)
    return 0
