"""The overview of a run: the numbers and chart data behind the viewer's first page."""

from __future__ import annotations

from typing import Any

import pandas as pd

from verifleet.orchestrator.stats import wilson

from ._index import ResultIndex

__all__ = ["GRANULAR_BINS", "overview", "template_summary", "wilson_interval"]

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


def template_summary(frame: pd.DataFrame) -> dict[str, Any]:
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


def _pass_rates(frame: pd.DataFrame) -> list[dict[str, Any]]:
    done = frame[frame["template"]]
    out = []
    for (answering, parsing), group in done.groupby(["answering", "parsing"], sort=True):
        total = len(group)
        passed = int((group["verify_result"] == True).sum())  # noqa: E712
        low, high = wilson_interval(passed, total)
        out.append(
            {
                "answering": answering,
                "parsing": parsing,
                "total": total,
                "passed": passed,
                "failed": int((group["verify_result"] == False).sum()),  # noqa: E712
                "pass_rate": passed / total,
                "low": low,
                "high": high,
            }
        )
    return out


def _granular(frame: pd.DataFrame) -> dict[str, Any]:
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


def _rubric(traits: pd.DataFrame) -> dict[str, Any]:
    if traits.empty:
        return {"traits": [], "models": [], "means": [], "counts": []}
    table = traits.groupby(["answering", "trait"])["score"].agg(["mean", "count"])
    models = sorted(traits["answering"].unique().tolist())
    names = sorted(traits["trait"].unique().tolist())
    kinds = traits.drop_duplicates("trait").set_index("trait")["trait_type"].to_dict()
    stats: dict[tuple[str, str], tuple[float, int]] = {
        key: (float(mean), int(count)) for key, mean, count in table.itertuples(name=None)
    }
    means = [[stats[(m, n)][0] if (m, n) in stats else None for n in names] for m in models]
    counts = [[stats[(m, n)][1] if (m, n) in stats else 0 for n in names] for m in models]
    return {
        "traits": [{"name": n, "type": kinds[n]} for n in names],
        "models": models,
        "means": means,
        "counts": counts,
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


def _counts(frame: pd.DataFrame) -> dict[str, Any]:
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


def _top_errors(frame: pd.DataFrame, limit: int = 10) -> list[dict[str, Any]]:
    errors = frame.loc[~frame["completed"], "error"]
    # The first line (up to 120 characters) groups the same failure across questions.
    heads = errors.str.split("\n").str[0].str.slice(0, 120)
    return [{"error": e, "count": int(c)} for e, c in heads.value_counts().head(limit).items()]


def overview(index: ResultIndex) -> dict[str, Any]:
    """Everything the overview page shows about the results in ``index``.

    Returns:
        ``summary`` (:func:`template_summary`), ``totals`` (results, questions,
        errors, tokens, time), ``pass_rates`` (per answering × parsing pair with
        its Wilson interval), ``granular`` (histograms per answering model),
        ``rubric`` (mean trait score per answering model), ``counts`` (errors and
        check overrides per answering model) and ``top_errors``.
    """
    frame = index.frame
    return {
        "summary": template_summary(frame),
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
        "granular": _granular(frame),
        "rubric": _rubric(index.trait_frame),
        "counts": _counts(frame),
        "top_errors": _top_errors(frame),
    }
