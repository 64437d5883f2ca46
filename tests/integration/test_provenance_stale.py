"""Provenance end to end through the CLI: every result carries a fingerprint, a
run writes its manifest into the file and beside it, ``reverify`` takes the
run's own settings from it, and ``reverify --stale`` re-judges exactly the
results whose template changed and calls no answering model.

The endpoints are the scripted double of ``bench/endpoint.py`` served over real
HTTP, one per role, so that each one's ``/stats`` counts that role's calls (a
real model's calls cannot be counted from outside)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _support.fleet import run_cli
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import read_manifest, read_results
from verifleet.schemas import FINGERPRINT_PARTS, dump_benchmark

pytestmark = pytest.mark.integration

N = 100
EDITED = ("q0003", "q0050", "q0097")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "VERIFLEET_REDIS_URL"}


def _cli(*args: str) -> str:
    """Run ``verifleet ARGS`` with no Redis in the environment; its stderr,
    whitespace folded (rich wraps lines), after checking it succeeded."""
    done = run_cli(*args, env=_env(), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return _flat(done.stderr)


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_stale_reverify_rejudges_exactly_the_changed_templates(tmp_path: Path) -> None:
    bench, answers = capitals_benchmark(N)
    first_bench = tmp_path / "bench.yaml"
    dump_benchmark(bench, first_bench)
    edited = bench.model_copy(
        update={
            "questions": [
                q.model_copy(update={"answer_template": f"{q.answer_template}\n# edited\n"})
                if q.id in EDITED
                else q
                for q in bench.questions
            ]
        }
    )
    edited_bench = tmp_path / "edited.yaml"
    dump_benchmark(edited, edited_bench)
    first = tmp_path / "first.parquet"
    with (
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as judge,
    ):
        _cli(
            "run", str(first_bench),
            "--answering", f"{answer.base_url}#answerer",
            "--parsing", f"{judge.base_url}#judge",
            "--no-preflight", "--out", str(first),
        )  # fmt: skip
        assert (answer.stats().calls, judge.stats().calls) == (N, N)

        # Every result has a fingerprint, as columns of the file too.
        stored = list(read_results(first))
        assert len(stored) == N
        assert all(r.metadata.fingerprint is not None for r in stored)
        table = pq.read_table(first)
        for part in (*FINGERPRINT_PARTS, "digest"):
            assert table.column(f"fingerprint_{part}").null_count == 0
        # The manifest is in the footer and beside the file, and names the run.
        manifest = read_manifest(first)
        assert manifest is not None
        assert manifest["config"]["parsing_models"][0]["model_name"] == "judge"
        assert manifest["benchmark"]["questions"] == N
        assert (tmp_path / "first.parquet.manifest.json").is_file()

        # Nothing changed: nothing is stale, no model is called, and the run's
        # own settings are used (no --parsing needed, no setting reported).
        answer.reset()
        judge.reset()
        same = tmp_path / "same.parquet"
        text = _cli(
            "reverify", str(first), "--benchmark", str(first_bench), "--stale",
            "--out", str(same),
        )  # fmt: skip
        assert "0 of 100 units stale" in text, text[-2000:]
        assert "setting changed" not in text
        assert (answer.stats().calls, judge.stats().calls) == (0, 0)
        assert len(read_results(same)) == N

        # Three templates edited: exactly those three are re-judged.
        answer.reset()
        judge.reset()
        second = tmp_path / "second.parquet"
        text = _cli(
            "reverify", str(first), "--benchmark", str(edited_bench), "--stale",
            "--out", str(second),
        )  # fmt: skip
        assert "3 of 100 units stale (3 results; template: 3)" in text, text[-2000:]
        assert answer.stats().calls == 0, "no answering call"
        assert judge.stats().calls == 3, "one parse per re-judged result"
    again = list(read_results(second))
    assert len(again) == N
    rejudged = {r.metadata.question_id for r in again if r.metadata.derived_from}
    assert rejudged == set(EDITED)
    before = {r.metadata.question_id: r for r in stored}
    for r in again:
        if r.metadata.question_id in EDITED:
            old = before[r.metadata.question_id]
            assert r.metadata.template_id != old.metadata.template_id
            assert r.metadata.fingerprint is not None and old.metadata.fingerprint is not None
            assert r.metadata.fingerprint.changed_parts(old.metadata.fingerprint) == ["template"]
        else:
            # Fresh results are copied untouched.
            assert r == before[r.metadata.question_id]


def test_reverify_of_a_file_says_which_settings_it_changed(tmp_path: Path) -> None:
    bench, answers = capitals_benchmark(4)
    path = tmp_path / "bench.yaml"
    dump_benchmark(bench, path)
    first = tmp_path / "first.jsonl"
    with (
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as judge,
    ):
        _cli(
            "run", str(path),
            "--answering", f"{answer.base_url}#answerer",
            "--parsing", f"{judge.base_url}#judge",
            "--no-preflight", "--out", str(first),
        )  # fmt: skip
        # A JSON Lines file has no footer: the manifest beside it is read.
        assert (tmp_path / "first.jsonl.manifest.json").is_file()
        text = _cli(
            "reverify", str(first), "--benchmark", str(path),
            "--parsing", f"{judge.base_url}#judge2", "--out", str(tmp_path / "b.jsonl"),
        )  # fmt: skip
        assert re.search(
            r"setting changed from the run's: parsing_models: \[judge\] -> \[judge2\]",
            text,
        ), text[-2000:]
        # Control: without the manifest the same command says it has none.
        (tmp_path / "first.jsonl.manifest.json").unlink()
        text = _cli(
            "reverify", str(first), "--benchmark", str(path),
            "--parsing", f"{judge.base_url}#judge", "--out", str(tmp_path / "c.jsonl"),
        )  # fmt: skip
        assert "has no run manifest" in text
