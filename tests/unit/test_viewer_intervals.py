"""The viewer's intervals and replicate figures against results.stats and the
CLI's end table, on a fixed replicated run where the Wilson interval (every
verdict independent) is visibly narrower than the clustered one (questions as
clusters): the viewer must show the clustered one, the very one the CLI prints."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import statsmodels.api as sm
from _support.viewer_data import flaky_question, full_run
from fastapi.testclient import TestClient
from rich.console import Console

from verifleet.orchestrator import write_results
from verifleet.orchestrator._local.tally import PassRateTally
from verifleet.results.stats import (
    clustered_mean,
    naive_mean,
    rate_interval,
    replicate_stats,
    wilson,
)
from verifleet.schemas import VerificationResult
from verifleet.viewer import FileRun, ResultIndex, create_app, overview, report_html

QUESTIONS = 30
REPLICATES = 3


@pytest.fixture(scope="module")
def replicated() -> list[VerificationResult]:
    """30 questions x 2 answering x 2 parsing models x 3 replicates."""
    return full_run(4 * QUESTIONS, replicates=REPLICATES)


@pytest.fixture(scope="module")
def parquet(tmp_path_factory: pytest.TempPathFactory, replicated: list) -> Path:  # type: ignore[type-arg]
    path = tmp_path_factory.mktemp("intervals") / "replicated.parquet"
    write_results(replicated, path)
    return path


@pytest.fixture(scope="module")
def served(parquet: Path) -> dict[str, Any]:
    """The overview as the viewer's API answers it for the Parquet file."""
    with TestClient(create_app([FileRun(parquet)])) as client:
        reply = client.get("/api/runs/0/overview")
        assert reply.status_code == 200
        return dict(reply.json())


def _pair(result: VerificationResult) -> tuple[str, str]:
    return (result.metadata.answering_model, result.metadata.parsing_model)


def _verdict(result: VerificationResult) -> bool | None:
    value = result.template.verify_result if result.template is not None else None
    return value if isinstance(value, bool) else None


def test_pair_intervals_are_the_cli_end_tables_clustered_ones(
    replicated: list,  # type: ignore[type-arg]
    served: dict[str, Any],
) -> None:
    tally = PassRateTally()
    for result in replicated:
        tally.add(result)
    rates = served["pass_rates"]
    assert len(rates) == 4
    for entry in rates:
        counts = tally.pairs[(entry["answering"], entry["parsing"])]
        interval = counts.interval()
        assert interval is not None and interval.method == "clustered"
        assert entry["method"] == "clustered" and entry["questions"] == interval.clusters
        assert (entry["low"], entry["high"]) == (interval.low, interval.high)
        # The naive figure beside it is Wilson over the same verdicts ...
        naive = wilson(counts.passed, counts.passed + counts.failed)
        assert (entry["wilson_low"], entry["wilson_high"]) == (naive.low, naive.high)
        # ... and visibly too narrow: the replicates of a question mostly agree.
        assert naive.width < 0.75 * interval.width
    # What the CLI prints, cell by cell, is the viewer's interval at its precision.
    console = Console(width=300, record=True)
    console.print(tally.table())
    printed = console.export_text()
    for entry in rates:
        shown = f"{entry['low']:.1%}-{entry['high']:.1%}"
        line = next(
            row
            for row in printed.splitlines()
            if entry["answering"] in row and entry["parsing"] in row
        )
        assert shown in line


def test_pair_interval_matches_statsmodels_cluster_robust_errors(
    replicated: list,  # type: ignore[type-arg]
    served: dict[str, Any],
) -> None:
    # An implementation apart from verifleet's: OLS on a constant with CR1 errors.
    by_pair: dict[tuple[str, str], tuple[list[float], list[str]]] = defaultdict(lambda: ([], []))
    for result in replicated:
        verdict = _verdict(result)
        if verdict is not None:
            values, groups = by_pair[_pair(result)]
            values.append(float(verdict))
            groups.append(result.metadata.question_id)
    for entry in served["pass_rates"]:
        values, groups = by_pair[(entry["answering"], entry["parsing"])]
        codes = np.unique(np.asarray(groups), return_inverse=True)[1]
        fit = sm.OLS(np.asarray(values), np.ones(len(values))).fit(
            cov_type="cluster", cov_kwds={"groups": codes}, use_t=False
        )
        low, high = (float(x) for x in fit.conf_int(alpha=0.05)[0])
        assert entry["low"] == pytest.approx(max(0.0, low), rel=1e-9)
        assert entry["high"] == pytest.approx(min(1.0, high), rel=1e-9)


def test_overall_pass_rate_interval_clusters_every_verdict_by_question(
    replicated: list,  # type: ignore[type-arg]
    served: dict[str, Any],
) -> None:
    judged = [r for r in replicated if _verdict(r) is not None]
    expected = rate_interval(
        [_verdict(r) is True for r in judged], [r.metadata.question_id for r in judged]
    )
    assert served["pass_rate_interval"] == expected.as_dict()
    assert expected.method == "clustered" and expected.clusters < QUESTIONS + 1
    naive = wilson(sum(_verdict(r) is True for r in judged), len(judged))
    assert naive.width < 0.75 * expected.width


def test_trait_means_have_clustered_intervals(
    replicated: list,  # type: ignore[type-arg]
    served: dict[str, Any],
) -> None:
    rubric = served["rubric"]
    scores: dict[tuple[str, str], tuple[list[float], list[str]]] = defaultdict(lambda: ([], []))
    for result in replicated:
        assert result.rubric is not None
        for name, value in (result.rubric.llm_trait_scores or {}).items():
            values, groups = scores[(result.metadata.answering_model, name)]
            values.append(float(value))
            groups.append(result.metadata.question_id)
    names = [t["name"] for t in rubric["traits"]]
    j = names.index("clarity")
    for i, model in enumerate(rubric["models"]):
        values, groups = scores[(model, "clarity")]
        expected = clustered_mean(values, groups)
        cell = rubric["intervals"][i][j]
        assert rubric["means"][i][j] == pytest.approx(expected.estimate)
        assert cell == {
            "low": pytest.approx(expected.low, rel=1e-12),
            "high": pytest.approx(expected.high, rel=1e-12),
            "questions": QUESTIONS,
        }
        # The 3 replicates of an answer score alike: six scores of a question
        # (2 judges x 3 replicates) are not six independent observations.
        assert naive_mean(values).width < 0.85 * (cell["high"] - cell["low"])


def test_replicate_figures_are_replicate_stats_of_each_pair(
    replicated: list,  # type: ignore[type-arg]
    served: dict[str, Any],
) -> None:
    figures = served["replicates"]
    assert figures["k"] == REPLICATES
    by_pair: dict[tuple[str, str], dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for result in replicated:
        verdict = _verdict(result)
        if verdict is not None:
            by_pair[_pair(result)][result.metadata.question_id].append(verdict)
    assert len(figures["pairs"]) == 4
    for row in figures["pairs"]:
        expected = replicate_stats(by_pair[(row["answering"], row["parsing"])], k=REPLICATES)
        assert {key: row[key] for key in ("pass_at_k", "pass_hat_k", "consistency", "flaky")} == {
            "pass_at_k": pytest.approx(expected.pass_at_k),
            "pass_hat_k": pytest.approx(expected.pass_hat_k),
            "consistency": pytest.approx(expected.consistency),
            "flaky": expected.flaky,
        }
        assert row["pass_at_k"] > row["pass_hat_k"]  # flaky questions split the two
    flaky_pairs = {
        (question, *pair)
        for pair, questions in by_pair.items()
        for question, verdicts in questions.items()
        if 0 < sum(verdicts) < len(verdicts)
    }
    assert figures["flaky"] == len(flaky_pairs)
    listed = [(q["question_id"], q["answering"], q["parsing"]) for q in figures["flakiest"]]
    assert len(listed) == 10 and set(listed) <= flaky_pairs
    assert all(flaky_question(int(q[0][1:])) for q in listed)
    assert all(q["passed"] in (1, 2) and q["replicates"] == REPLICATES for q in figures["flakiest"])


def test_without_replicates_the_interval_is_wilsons_and_there_are_no_replicate_figures() -> None:
    index = ResultIndex()
    results = full_run(48)
    index.add(results)
    shown = overview(index)
    assert shown["replicates"] is None
    for entry in shown["pass_rates"]:
        assert entry["method"] == "wilson"
        assert (entry["low"], entry["high"]) == (entry["wilson_low"], entry["wilson_high"])


def test_report_embeds_the_same_figures(parquet: Path, served: dict[str, Any]) -> None:
    html = report_html([FileRun(parquet)])
    boot = re.search(r'<script type="application/json" id="boot">(.*?)</script>', html, re.S)
    assert boot is not None
    embedded = json.loads(boot.group(1))["runs"][0]["overview"]
    for key in ("pass_rates", "pass_rate_interval", "replicates", "rubric"):
        assert embedded[key] == served[key]
    assert "window.verifleetFigures" in html
