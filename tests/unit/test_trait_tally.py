"""The end-of-run table's trait means: per (answering model, trait) the mean of
every numeric score and its interval with questions as clusters, checked against
statsmodels' cluster-robust OLS on a constant and against the viewer's scores."""

from __future__ import annotations

import io

import numpy as np
import statsmodels.api as sm
from _support.viewer_data import full_run
from rich.console import Console

from verifleet.orchestrator._local.tally import TraitTally
from verifleet.schemas import VerificationResult, numeric_trait_scores, result_trait_scores


def _replicated(replicates: int = 3) -> list[VerificationResult]:
    return full_run(40, replicates=replicates)


def test_trait_means_and_clustered_intervals_equal_statsmodels() -> None:
    results = _replicated()
    tally = TraitTally()
    for result in results:
        tally.add(result)
    assert tally.cells, "the fixture must carry rubric scores"
    checked = 0
    for (answering, trait), questions in tally.cells.items():
        values, groups = [], []
        for result in results:
            if result.metadata.answering.display_string != answering:
                continue
            for name, _kind, score in result_trait_scores(result.rubric):
                if name == trait:
                    values.append(score)
                    groups.append(result.metadata.question_id)
        assert sum(n for _, n in questions.values()) == len(values)
        if len(set(groups)) < 2 or np.ptp(values) == 0:
            continue
        codes = {g: i for i, g in enumerate(dict.fromkeys(groups))}
        fit = sm.OLS(np.array(values), np.ones(len(values))).fit(
            cov_type="cluster", cov_kwds={"groups": np.array([codes[g] for g in groups])}
        )
        low, high = fit.conf_int()[0]
        table = io.StringIO()
        Console(file=table, width=200).print(tally.table())
        row = next(
            line for line in table.getvalue().splitlines() if trait in line and answering in line
        )
        assert f"{fit.params[0]:.3g}" in row
        assert f"{low:.3g}-{high:.3g}" in row, row
        checked += 1
    assert checked > 0


def test_numeric_scores_count_booleans_as_one_and_zero_and_metrics_per_metric() -> None:
    typed = {
        "llm": {"polite": True, "clarity": 4, "tone": "warm"},
        "regex": {"cites": False},
        "callable": {"length": float("nan")},
        "agentic": None,
    }
    metrics = {"overlap": {"precision": 0.5, "recall": 1}}
    assert sorted(numeric_trait_scores(typed, metrics)) == [
        ("cites", "regex", 0.0),
        ("clarity", "llm", 4.0),
        ("overlap.precision", "metric", 0.5),
        ("overlap.recall", "metric", 1.0),
        ("polite", "llm", 1.0),
    ]


def test_no_scores_no_table_and_one_question_no_interval() -> None:
    tally = TraitTally()
    assert tally.table() is None
    everything = _replicated(3)
    first = everything[0].metadata.question_id
    results = [r for r in everything if r.metadata.question_id == first]
    for result in results:
        tally.add(result)
    assert tally.cells, "the fixture's first question must carry rubric scores"
    out = io.StringIO()
    Console(file=out, width=200).print(tally.table())
    assert "n/a" in out.getvalue()
