"""``verifleet compare`` and ``verifleet judges`` run as a user runs them, on
result files whose fingerprints say what changed: every flip is attributed to
the part that changed, and the figures equal statsmodels' on the same data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import statsmodels.api as sm
from _support.factories import make_result
from _support.fleet import run_cli
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.inter_rater import cohens_kappa

from verifleet.orchestrator import write_results
from verifleet.results.stats import append_label, labels_path, unit_key
from verifleet.schemas import ResultFingerprint, VerificationResult

QUESTIONS = 30
REPLICATES = 2


def _fingerprint(template: str = "t1", judge: str = "j1") -> ResultFingerprint:
    return ResultFingerprint(
        question="q",
        template=template,
        rubric="none",
        judge=judge,
        answering="a",
        settings="s",
        version="0.1.0",
        digest=f"{template}{judge}",
    )


def _result(
    q: int, replicate: int, verified: bool, fp: ResultFingerprint, answering: str = "m1"
) -> VerificationResult:
    r = make_result(f"q{q:02d}", answering=answering, replicate=replicate, verified=verified)
    return r.model_copy(update={"metadata": r.metadata.model_copy(update={"fingerprint": fp})})


def _runs() -> tuple[list[VerificationResult], list[VerificationResult], dict[str, str]]:
    """Run A and run B: q00-q09 got a new template, q10-q19 a new judge, q20-q29
    nothing. Questions with an odd number flip in B (both replicates), so
    flips cluster by question; q25 flips in one replicate with nothing changed."""
    a: list[VerificationResult] = []
    b: list[VerificationResult] = []
    expected: dict[str, str] = {}
    for q in range(QUESTIONS):
        before = q % 3 != 0
        for rep in range(1, REPLICATES + 1):
            a.append(_result(q, rep, before, _fingerprint()))
            if q < 10:
                fp, reason = _fingerprint(template="t2"), "template"
            elif q < 20:
                fp, reason = _fingerprint(judge="j2"), "judge"
            else:
                fp, reason = _fingerprint(), "nothing recorded"
            flips = (q % 2 == 1 and q < 20) or (q == 25 and rep == 1)
            b.append(_result(q, rep, (not before) if flips else before, fp))
            if flips:
                expected[f"q{q:02d}#{rep}"] = reason
    return a, b, expected


def test_compare_attributes_every_flip_and_matches_statsmodels(tmp_path: Path) -> None:
    a, b, expected = _runs()
    write_results(a, tmp_path / "a.parquet")
    write_results(b, tmp_path / "b.parquet")
    done = run_cli("compare", str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    got = {f"{f['question_id']}#{f['replicate']}": f["reasons"] for f in report["flips"]}
    assert got == {k: [v] for k, v in expected.items()}
    assert report["flip_reasons"] == {"judge": 10, "nothing recorded": 1, "template": 10}

    overall = report["overall"]
    va = np.array([bool(r.template.verify_result) for r in a], dtype=float)
    vb = np.array([bool(r.template.verify_result) for r in b], dtype=float)
    assert overall["a_only"] == int(((va == 1) & (vb == 0)).sum())
    assert overall["b_only"] == int(((va == 0) & (vb == 1)).sum())
    table = [
        [overall["both_pass"], overall["a_only"]],
        [overall["b_only"], overall["both_fail"]],
    ]
    assert overall["mcnemar_p"] == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9)
    groups = np.repeat(np.arange(QUESTIONS), REPLICATES)
    fit = sm.OLS(vb - va, np.ones(len(va))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    low, high = fit.conf_int(alpha=0.05)[0]
    assert overall["difference"]["estimate"] == pytest.approx(float(np.mean(vb - va)))
    assert overall["difference"]["low"] == pytest.approx(low, rel=1e-9)
    assert overall["difference"]["high"] == pytest.approx(high, rel=1e-9)
    assert overall["clusters"] == QUESTIONS and overall["pairs"] == QUESTIONS * REPLICATES
    # The interval that ignores clustering is narrower on these clustered flips.
    naive = overall["naive"]
    assert naive["high"] - naive["low"] < high - low
    assert list(report["groups"]) == ["openai_endpoint:m1"]

    # The text output says the same.
    done = run_cli("compare", str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "flips: 21 (judge: 10, nothing recorded: 1, template: 10)" in done.stdout


def test_compare_two_models_of_one_run(tmp_path: Path) -> None:
    results = [
        _result(q, rep, q % 2 == 0, _fingerprint(), answering="m1")
        for q in range(10)
        for rep in (1, 2)
    ] + [
        _result(q, rep, q % 5 != 0, _fingerprint(), answering="m2")
        for q in range(10)
        for rep in (1, 2)
    ]
    write_results(results, tmp_path / "run.parquet")
    done = run_cli("compare", str(tmp_path / "run.parquet"), "--models", "m1", "m2", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    overall = json.loads(done.stdout)["overall"]
    assert (overall["rate_a"], overall["rate_b"]) == (0.5, 0.8)
    # m1 passes even questions, m2 all but q0 and q5; two replicates each.
    assert (overall["both_pass"], overall["a_only"], overall["b_only"]) == (8, 2, 8)
    assert overall["mcnemar_p"] == pytest.approx(mcnemar([[8, 2], [8, 2]], exact=True).pvalue)
    done = run_cli("compare", str(tmp_path / "run.parquet"), "--models", "m1", "m9")
    assert done.returncode == 2 and "no answering model 'm9'" in done.stderr


def test_judges_agreement_and_accuracy_against_labels(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    results = []
    truth = {}
    for q in range(40):
        right = bool(rng.random() < 0.6)
        for judge, error_rate in (("j1", 0.1), ("j2", 0.25), ("j3", 0.4)):
            wrong = bool(rng.random() < error_rate)
            r = make_result(f"q{q:02d}", parsing=judge, verified=right != wrong)
            results.append(r)
            truth[unit_key(r)] = right
    path = tmp_path / "run.parquet"
    write_results(results, path)
    for key, right in list(truth.items())[:30]:
        append_label(labels_path(path), key, right, note="checked by hand")
    done = run_cli("judges", str(path), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["judges"] == ["openai_endpoint:j1", "openai_endpoint:j2", "openai_endpoint:j3"]
    assert report["units"] == 40 and report["fleiss"]["raters"] == 3
    v = {
        j: [r.template.verify_result for r in results if r.metadata.parsing.model_name == j]
        for j in ("j1", "j2", "j3")
    }
    table = np.array(
        [
            [
                sum(1 for x, y in zip(v["j1"], v["j2"], strict=True) if x == p and y == c)
                for c in (True, False)
            ]
            for p in (True, False)
        ]
    )
    pair = report["pairwise"]["openai_endpoint:j1 | openai_endpoint:j2"]
    assert pair["kappa"] == pytest.approx(cohens_kappa(table).kappa)
    disagreeing = sum(1 for i in range(40) if len({v["j1"][i], v["j2"][i], v["j3"][i]}) > 1)
    assert len(report["disagreements"]) == disagreeing
    labelled = list(truth.values())[:30]
    for j in ("j1", "j2", "j3"):
        figures = report["against_labels"][f"openai_endpoint:{j}"]
        correct = sum(1 for x, t in zip(v[j][:30], labelled, strict=True) if x == t)
        assert figures["n"] == 30
        assert figures["accuracy"]["estimate"] == pytest.approx(correct / 30)
    # Control: without labels there are no figures against them.
    labels_path(path).unlink()
    done = run_cli("judges", str(path))
    assert done.returncode == 0 and "no human labels" in done.stdout
