"""The overview of a run: the numbers and chart data behind the viewer's first page.

Every interval and replicate figure comes from :mod:`verifleet.results.stats`
(the functions the CLI's end table, ``status`` and ``compare`` use), fed with
per-question counts: questions are the clusters (docs/results.md).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pandas as pd

from verifleet.errors import StatisticsError
from verifleet.results.stats import (
    Interval,
    clustered_mean_from_sums,
    rate_interval_from_sums,
    replicate_stats,
    wilson,
)

from ._index import ResultIndex

__all__ = [
    "FLAKIEST",
    "GRANULAR_BINS",
    "overview",
    "pass_rate_interval",
    "replicate_figures",
    "template_summary",
    "wilson_interval",
]

FLAKIEST = 10
"""How many of the flakiest questions the overview lists."""

GRANULAR_BINS = 10
"""Bins of the granular score histograms (equal width over [0, 1], or over the
scores' range when some fall outside it)."""


def wilson_interval(passed: int, total: int) -> tuple[float, float]:
    """The 95 % Wilson score interval of a pass rate (see :func:`stats.wilson`).

    Returns:
        ``(low, high)``; ``(0.0, 1.0)`` when ``total`` is 0 (nothing is known).
    """
    interval = wilson(passed, total)
    return interval.low, interval.high


def template_summary(frame: pd.DataFrame) -> dict[str, object]:
    """The same dict as ``TemplateResults.get_template_summary()`` over the results
    summarised in ``frame`` (counts over results whose template verification ran)."""
    done = frame[frame["template"]]
    passed = int((done["verify_result"] == True).sum())  # noqa: E712 (object column)
    return {
        "num_results": len(done),
        "num_passed": passed,
        "num_failed": int((done["verify_result"] == False).sum()),  # noqa: E712
        "pass_rate": passed / len(done) if len(done) else 0.0,
        "num_with_embedding": int(done["embedding"].sum()),
        "num_with_regex": int(done["regex"].sum()),
        "num_with_abstention": int(done["abstention"].sum()),
        "num_questions": int(done["question_id"].nunique()),
    }


def _verdicts(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows with a boolean verdict (what the CLI's tally counts), with a 0/1
    ``passed`` column."""
    judged = frame[frame["verify_result"].isin([True, False])]
    return judged.assign(passed=(judged["verify_result"] == True).astype(float))  # noqa: E712


def pass_rate_interval(judged: pd.DataFrame) -> Interval | None:
    """The 95 % interval of the pass rate of ``judged`` (rows of :func:`_verdicts`)
    with questions as clusters: :func:`stats.rate_interval_from_sums` on each
    question's passes and verdicts, the very call of the CLI's end table (so
    Wilson's interval when every question has one verdict).

    Returns:
        None when no row has a verdict.
    """
    if judged.empty:
        return None
    per_question = judged.groupby("question_id", sort=False)["passed"].agg(["sum", "count"])
    return rate_interval_from_sums(per_question["sum"].to_numpy(), per_question["count"].to_numpy())


def _interval_fields(interval: Interval | None) -> dict[str, object]:
    if interval is None:
        return {"low": 0.0, "high": 1.0, "method": None, "questions": 0}
    return {
        "low": interval.low,
        "high": interval.high,
        "method": interval.method,
        "questions": interval.clusters,
    }


def _pass_rates(frame: pd.DataFrame) -> list[dict[str, object]]:
    done = frame[frame["template"]]
    judged = dict(iter(_verdicts(frame).groupby(["answering", "parsing"], sort=False)))
    out = []
    for (answering, parsing), group in done.groupby(["answering", "parsing"], sort=True):
        total = len(group)
        passed = int((group["verify_result"] == True).sum())  # noqa: E712
        pair = judged.get((answering, parsing), group.iloc[0:0].assign(passed=0.0))
        naive = wilson(int(pair["passed"].sum()), len(pair))
        out.append(
            {
                "answering": answering,
                "parsing": parsing,
                "total": total,
                "passed": passed,
                "failed": int((group["verify_result"] == False).sum()),  # noqa: E712
                "pass_rate": passed / total,
                **_interval_fields(pass_rate_interval(pair)),
                # Shown beside the clustered interval: how much clustering matters.
                "wilson_low": naive.low,
                "wilson_high": naive.high,
            }
        )
    return out


def replicate_figures(frame: pd.DataFrame, top: int = FLAKIEST) -> dict[str, object] | None:
    """pass@k, pass^k, consistency and the flakiest questions of each answering x
    parsing pair (:func:`stats.replicate_stats`, questions' replicate verdicts).

    ``k`` is the most verdicts any question of any pair has (the run's replicates);
    a question with fewer (a replicate errored) is left out of pass@k and pass^k
    and counted in ``questions_with_k``.

    Returns:
        ``{"k", "pairs": [...], "flaky", "flakiest": [...]}`` where each pair has
        :meth:`ReplicateStats.as_dict`'s figures (without its list) and
        ``flakiest`` lists the ``top`` flakiest (question, pair)s of the run; None
        when no question of a pair has two verdicts (no replicates).
    """
    judged = _verdicts(frame)
    if judged.empty:
        return None
    counted = judged.groupby(["answering", "parsing", "question_id"], sort=True)["passed"].agg(
        ["sum", "count"]
    )
    # replicate_stats counts passes per question; the replicates' order plays no part.
    verdicts: dict[Hashable, list[bool]] = {}
    pairs: dict[tuple[str, str], dict[Hashable, list[bool]]] = {}
    for (answering, parsing, question), passed, n in counted.itertuples(name=None):
        values = [True] * int(passed) + [False] * (int(n) - int(passed))
        verdicts[(answering, parsing, question)] = values
        pairs.setdefault((answering, parsing), {})[question] = values
    k = max(len(v) for v in verdicts.values())
    if k < 2:
        return None
    rows = []
    for (answering, parsing), questions in pairs.items():
        figures = replicate_stats(questions, k=k, top=0).as_dict()
        del figures["flakiest"]
        rows.append({"answering": answering, "parsing": parsing, **figures})
    overall = replicate_stats(verdicts, k=k, top=top)
    return {
        "k": k,
        "pairs": rows,
        "flaky": overall.flaky,
        "flakiest": [
            {
                "question_id": q.key[2],
                "answering": q.key[0],
                "parsing": q.key[1],
                "replicates": q.replicates,
                "passed": q.passed,
                "rate": q.rate,
                "consistency": q.consistency,
            }
            for q in overall.flakiest
            if isinstance(q.key, tuple)
        ],
    }


def _granular(frame: pd.DataFrame) -> dict[str, object]:
    scores = frame.loc[frame["granular"].notna(), ["answering", "granular"]]
    if scores.empty:
        return {"edges": [], "series": []}
    low, high = float(scores["granular"].min()), float(scores["granular"].max())
    # Scores in [0, 1] (the usual case) share fixed bins, so two runs compare by eye.
    low, high = (0.0, 1.0) if low >= 0.0 and high <= 1.0 else (low, high)
    width = (high - low) / GRANULAR_BINS or 1.0
    edges = [low + i * width for i in range(GRANULAR_BINS + 1)]
    series = []
    for answering, group in scores.groupby("answering", sort=True):
        bins = ((group["granular"] - low) / width).astype(int).clip(0, GRANULAR_BINS - 1)
        counts = bins.value_counts().reindex(range(GRANULAR_BINS), fill_value=0)
        series.append(
            {
                "answering": answering,
                "counts": [int(c) for c in counts],
                "mean": float(group["granular"].mean()),
                "n": len(group),
            }
        )
    return {"edges": edges, "series": series}


def _trait_interval(scores: pd.DataFrame) -> dict[str, object] | None:
    """The clustered 95 % interval of a trait's mean (questions as clusters:
    :func:`stats.clustered_mean_from_sums`); None with fewer than two questions."""
    per_question = scores.groupby("question_id", sort=False)["score"].agg(["sum", "count"])
    try:
        interval = clustered_mean_from_sums(
            per_question["sum"].to_numpy(), per_question["count"].to_numpy()
        )
    except StatisticsError:
        return None
    return {"low": interval.low, "high": interval.high, "questions": interval.clusters}


def _rubric(traits: pd.DataFrame, frame: pd.DataFrame) -> dict[str, object]:
    if traits.empty:
        return {"traits": [], "models": [], "means": [], "counts": [], "intervals": []}
    # A trait row knows its result's row; the question (the cluster) is on the result.
    question_of = frame.drop_duplicates("row", keep="last").set_index("row")["question_id"]
    traits = traits.assign(question_id=traits["row"].map(question_of))
    models = sorted(traits["answering"].unique().tolist())
    names = sorted(traits["trait"].unique().tolist())
    kinds = traits.drop_duplicates("trait").set_index("trait")["trait_type"].to_dict()
    cells = {key: group for key, group in traits.groupby(["answering", "trait"], sort=False)}
    means = [
        [float(cells[(m, n)]["score"].mean()) if (m, n) in cells else None for n in names]
        for m in models
    ]
    counts = [[len(cells[(m, n)]) if (m, n) in cells else 0 for n in names] for m in models]
    intervals = [
        [_trait_interval(cells[(m, n)]) if (m, n) in cells else None for n in names] for m in models
    ]
    return {
        "traits": [{"name": n, "type": kinds[n]} for n in names],
        "models": models,
        "means": means,
        "counts": counts,
        "intervals": intervals,
    }


_COUNTS = (
    ("errors", "results that did not complete (completed_without_errors=False)"),
    ("abstentions", "abstention detected"),
    ("abstention_overrides", "abstention overrode the verdict"),
    ("insufficient", "sufficiency check found the answer insufficient"),
    ("sufficiency_overrides", "sufficiency overrode the verdict"),
    ("embedding_overrides", "embedding check overrode the verdict"),
    ("deep_judgment_auto_fails", "rubric traits auto-failed for lack of valid excerpts"),
    ("recursion_limits", "agent hit its recursion limit"),
    ("regex_failures", "regex validations that did not all match"),
)


def _counts(frame: pd.DataFrame) -> dict[str, object]:
    rows: list[dict[str, Any]] = []
    for answering, group in frame.groupby("answering", sort=True):
        rows.append(
            {
                "answering": answering,
                "results": len(group),
                "errors": int((~group["completed"]).sum()),
                "abstentions": int(group["abstention_detected"].sum()),
                "abstention_overrides": int(group["abstention_override"].sum()),
                "insufficient": int(group["insufficient"].sum()),
                "sufficiency_overrides": int(group["sufficiency_override"].sum()),
                "embedding_overrides": int(group["embedding_override"].sum()),
                "deep_judgment_auto_fails": int(group["dj_auto_fails"].sum()),
                "recursion_limits": int(group["recursion_limit"].sum()),
                "regex_failures": int((group["regex"] & (group["regex_success"] == False)).sum()),  # noqa: E712
            }
        )
    totals = {name: sum(r[name] for r in rows) for name, _ in _COUNTS}
    return {
        "columns": [{"name": n, "help": h} for n, h in _COUNTS],
        "rows": rows,
        "totals": totals,
    }


def _top_errors(frame: pd.DataFrame, limit: int = 10) -> list[dict[str, object]]:
    errors = frame.loc[~frame["completed"], "error"]
    # The first line (up to 120 characters) groups the same failure across questions.
    heads = errors.str.split("\n").str[0].str.slice(0, 120)
    return [{"error": e, "count": int(c)} for e, c in heads.value_counts().head(limit).items()]


def overview(index: ResultIndex) -> dict[str, object]:
    """Everything the overview page shows about the results in ``index``.

    Returns:
        ``summary`` (:func:`template_summary`), ``pass_rate_interval`` (the
        overall pass rate's interval, :func:`pass_rate_interval`), ``totals``
        (results, questions, errors, tokens, time), ``pass_rates`` (per answering
        × parsing pair with its clustered interval and, for comparison, the
        Wilson interval that treats every verdict as independent), ``replicates``
        (:func:`replicate_figures`, None without replicates), ``granular``
        (histograms per answering model), ``rubric`` (mean trait score per
        answering model with its clustered interval), ``counts`` (errors and
        check overrides per answering model) and ``top_errors``.
    """
    frame = index.frame
    overall = pass_rate_interval(_verdicts(frame))
    return {
        "summary": template_summary(frame),
        "pass_rate_interval": None if overall is None else overall.as_dict(),
        "totals": {
            "num_results": len(frame),
            "num_questions": int(frame["question_id"].nunique()),
            "num_errors": int((~frame["completed"]).sum()),
            "num_with_rubric": int(frame["rubric"].sum()),
            "num_with_deep_judgment": int(frame["deep_judgment"].sum()),
            "total_tokens": int(frame["total_tokens"].fillna(0).sum()),
            "execution_time": float(frame["execution_time"].sum()),
        },
        "pass_rates": _pass_rates(frame),
        "replicates": replicate_figures(frame),
        "granular": _granular(frame),
        "rubric": _rubric(index.trait_frame, frame),
        "counts": _counts(frame),
        "top_errors": _top_errors(frame),
    }
