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
from _support.fleet import Fleet, run_cli
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import read_manifest, read_results
from verifleet.orchestrator._fleet.job import Job
from verifleet.results.stats import append_label, labels_path, read_labels, unit_key
from verifleet.schemas import FINGERPRINT_PARTS, ModelConfig, VerificationConfig, dump_benchmark
from verifleet.store import JobStatus

pytestmark = pytest.mark.integration

N = 100
EDITED = ("q0003", "q0050", "q0097")
EDITED_FLEET = ("q0002", "q0011", "q0017")


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

        # A person labelled two answers (one re-judged below, one not): the
        # labels go with the answers into the re-judged file and its columns.
        labelled = {unit_key(r): r.metadata.question_id == "q0003" for r in stored
                    if r.metadata.question_id in ("q0003", "q0004")}  # fmt: skip
        for key, right in labelled.items():
            append_label(labels_path(first), key, right, "by hand")

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
    assert read_labels(labels_path(second)) == labelled
    columns = pq.read_table(second, columns=["question_id", "label_correct"]).to_pylist()
    assert {
        (c["question_id"], c["label_correct"]) for c in columns if c["label_correct"] is not None
    } == {("q0003", True), ("q0004", False)}
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


def test_stale_reverify_of_a_fleet_job_rejudges_only_the_changed_questions_on_the_fleet(
    fleet: Fleet, redis_url: str, tmp_path: Path
) -> None:
    """``reverify JOB --stale --submit`` on two workers: the new job holds exactly
    the results of the questions whose template changed, judged again from the
    stored answers; no answering call is made; nothing stale submits nothing."""
    n = 20
    bench, answers = capitals_benchmark(n)
    edited = bench.model_copy(
        update={
            "questions": [
                q.model_copy(update={"answer_template": f"{q.answer_template}\n# edited\n"})
                if q.id in EDITED_FLEET
                else q
                for q in bench.questions
            ]
        }
    )
    same_file, edited_file = tmp_path / "same.yaml", tmp_path / "edited.yaml"
    dump_benchmark(bench, same_file)
    dump_benchmark(edited, edited_file)
    with (
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as judge,
    ):
        config = VerificationConfig.build(
            answering_models=[ModelConfig.parse(f"{answer.base_url}#answerer")],
            parsing_models=[ModelConfig.parse(f"{judge.base_url}#judge")],
            replicate_count=2,
        )
        fleet.start_worker("w1", concurrency=4)
        fleet.start_worker("w2", concurrency=4)
        fleet.wait_ready(["w1", "w2"])
        source = Job.submit(bench, config, redis_url)
        assert source.wait(timeout=120).status == JobStatus.DONE
        answer.reset()
        judge.reset()

        def rejudge(benchmark: Path) -> str:
            done = run_cli(
                "reverify", source.job_id, "--redis", redis_url, "--benchmark", str(benchmark),
                "--stale", "--submit", timeout=300,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr[-3000:]
            return _flat(done.stdout + done.stderr)

        # Control: nothing changed, nothing is stale, no job is submitted.
        text = rejudge(same_file)
        assert f"0 of {2 * n} units stale" in text and "no job submitted" in text, text[-2000:]
        text = rejudge(edited_file)
        assert f"6 of {2 * n} units stale (6 results; template: 6)" in text, text[-2000:]
        job_id = re.search(r"job (\S+): re-judges", text).group(1)  # type: ignore[union-attr]
        rejudged = Job(job_id, redis_url)
        assert rejudged.wait(timeout=120).status == JobStatus.DONE
        assert answer.stats().calls == 0, "no answering call"
        assert 1 <= judge.stats().calls <= 6  # identical answers may share a parse
    results = list(rejudged.iter_results())
    assert sorted((r.metadata.question_id, r.metadata.replicate) for r in results) == sorted(
        (q, rep) for q in EDITED_FLEET for rep in (1, 2)
    )
    before = {(r.metadata.question_id, r.metadata.replicate): r for r in source.iter_results()}
    for r in results:
        old = before[(r.metadata.question_id, r.metadata.replicate)]
        assert r.template is not None and old.template is not None
        assert r.template.raw_llm_response == old.template.raw_llm_response
        assert r.metadata.derived_from == f"job:{source.job_id}#{old.metadata.result_id}"
        assert r.metadata.fingerprint is not None
        assert r.metadata.fingerprint.changed_parts(old.metadata.fingerprint) == ["template"]
    # The source job is untouched: all its results are still there, as they were.
    assert len(before) == 2 * n
