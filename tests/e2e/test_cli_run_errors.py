"""``verifleet run`` when things go wrong, as a user meets it: real processes, real
HTTP against the fault-injecting endpoint of ``bench/`` (the only way to get 503s
for every call, then none, on demand).

Errors are visible (preflight, exit status) and retryable (``--retry-errors``,
each result once); nothing done is lost to a mistake made before it (output
checked and locked first; SIGTERM keeps the journal)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from _support.fleet import VERIFLEET, run_cli
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import read_results
from verifleet.orchestrator._local.journal import journal_path
from verifleet.orchestrator._local.lock import OutputLock
from verifleet.schemas import dump_benchmark
from verifleet.store import result_key

pytestmark = pytest.mark.e2e


def _bench(tmp_path: Path, n: int = 4) -> tuple[Path, dict]:
    bench, answers = capitals_benchmark(n, wrong_every=0)
    path = tmp_path / "bench.yaml"
    dump_benchmark(bench, path)
    return path, answers


def _no_retries(tmp_path: Path) -> Path:
    config = tmp_path / "config.yaml"
    config.write_text("retry_policy:\n  max_attempts: 1\n")
    return config


def test_an_unreachable_model_is_refused_before_anything_runs(tmp_path: Path) -> None:
    path, answers = _bench(tmp_path)
    out = tmp_path / "out.parquet"
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        proc = run_cli(
            "run",
            str(path),
            "--answering",
            "http://127.0.0.1:9/v1#nobody-home",
            "--parsing",
            f"{ep.base_url}#judge",
            "--out",
            str(out),
        )
        calls = ep.stats().calls
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert "preflight" in proc.stderr and "nobody-home" in proc.stderr
    assert "--no-preflight" in proc.stderr
    assert calls == 1  # the judge answered its one test call; no unit ran
    assert not out.exists() and not journal_path(out).exists()


def test_units_that_finish_before_a_failing_preflight_leave_nothing_recorded(
    tmp_path: Path,
) -> None:
    # The units' calls go beside the test calls. Here the test call of the one
    # model hangs past the request timeout twice (its prompt is delayed, the
    # units' are answered at once), so every unit can finish before the
    # preflight fails: the run must still stop with exit 2 and record nothing.
    path, answers = _bench(tmp_path)
    answers["Reply with the single word OK."] = {"text": "OK", "delay_ms": 5000}
    config = tmp_path / "config.yaml"
    config.write_text("request_timeout: 1.5\n")
    out = tmp_path / "out.parquet"
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        model = f"{ep.base_url}#m"
        proc = run_cli(
            "run",
            str(path),
            "--answering",
            model,
            "--parsing",
            model,
            "--config",
            str(config),
            "--out",
            str(out),
        )
        calls = ep.stats().calls
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "preflight" in proc.stderr and "Traceback" not in proc.stderr
    assert calls > 2  # the units called the model beside its test call
    assert not out.exists() and not journal_path(out).exists()


def test_errored_units_fail_the_run_and_retry_errors_runs_them_again_once(
    tmp_path: Path,
) -> None:
    path, answers = _bench(tmp_path)
    out = tmp_path / "out.parquet"
    config = _no_retries(tmp_path)
    with run_endpoint_in_thread(EndpointConfig(answers=answers, rate_5xx=1.0)) as ep:
        model = f"{ep.base_url}#m"
        args = ["run", str(path), "--answering", model, "--parsing", model]
        args += ["--config", str(config), "--out", str(out)]
        refused = run_cli(*args)
        first = run_cli(*args, "--no-preflight")
        again = run_cli(*args, "--no-preflight")
        ep.app.config.rate_5xx = 0.0  # the endpoint recovers
        retried = run_cli(*args, "--retry-errors")
    assert refused.returncode == 2 and "preflight" in refused.stderr, refused.stderr[-2000:]
    assert first.returncode == 1, first.stderr[-2000:]
    assert "4 of 4 results have errors" in first.stderr and "--retry-errors" in first.stderr
    # Without --retry-errors the errored units count as done, and still fail the run.
    assert again.returncode == 1 and "resumed: 4 of 4 units" in again.stderr, again.stderr
    assert retried.returncode == 0, retried.stderr[-2000:]
    assert "retrying the units of 4 errored results" in retried.stderr
    results = read_results(out)
    assert len(results) == 4
    assert len({result_key(r) for r in results}) == 4
    assert all(r.metadata.completed_without_errors for r in results)
    assert all(r.template and r.template.verify_result for r in results)


def test_max_error_rate_accepts_some_errors_including_those_already_in_the_output(
    tmp_path: Path,
) -> None:
    bench, answers = capitals_benchmark(4, wrong_every=0)
    bench.questions[1].answer_template = "class Answer(:\n"  # fails its question alone
    path = tmp_path / "bench.yaml"
    dump_benchmark(bench, path)
    out = tmp_path / "out.jsonl"
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        model = f"{ep.base_url}#m"
        args = ["run", str(path), "--answering", model, "--parsing", model, "--out", str(out)]
        strict = run_cli(*args)
        tolerant = run_cli(*args, "--max-error-rate", "0.3")
        too_strict = run_cli(*args, "--max-error-rate", "0.2")
        bad = run_cli(*args, "--max-error-rate", "2")
    assert strict.returncode == 1 and "1 of 4 results have errors" in strict.stderr
    assert tolerant.returncode == 0, tolerant.stderr[-2000:]
    assert "resumed: 4 of 4" in tolerant.stderr and "1 of 4 results have errors" in tolerant.stderr
    assert too_strict.returncode == 1
    assert bad.returncode == 2 and "from 0 to 1" in bad.stderr


def test_limit_and_questions_run_part_of_the_benchmark(tmp_path: Path) -> None:
    path, answers = _bench(tmp_path, n=12)
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        model = f"{ep.base_url}#m"
        base = ["run", str(path), "--answering", model, "--parsing", model]
        limited = run_cli(*base, "--limit", "3", "--out", str(tmp_path / "a.jsonl"))
        picked = run_cli(*base, "--questions", "q001?,q0002", "--out", str(tmp_path / "b.jsonl"))
        unknown = run_cli(*base, "--questions", "geo-*", "--out", str(tmp_path / "c.jsonl"))
    assert limited.returncode == 0, limited.stderr[-2000:]
    assert sorted(r.metadata.question_id for r in read_results(tmp_path / "a.jsonl")) == [
        "q0000",
        "q0001",
        "q0002",
    ]
    assert picked.returncode == 0, picked.stderr[-2000:]
    assert sorted(r.metadata.question_id for r in read_results(tmp_path / "b.jsonl")) == [
        "q0002",
        "q0010",
        "q0011",
    ]
    assert unknown.returncode == 2 and "geo-*" in unknown.stderr
    assert not (tmp_path / "c.jsonl").exists()


def test_the_output_is_checked_and_locked_before_any_unit_runs(tmp_path: Path) -> None:
    path, answers = _bench(tmp_path)
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        model = f"{ep.base_url}#m"
        base = ["run", str(path), "--answering", model, "--parsing", model]
        typo = run_cli(*base, "--out", str(tmp_path / "results.xlsx"))
        out = tmp_path / "busy.parquet"
        with OutputLock(out):
            locked = run_cli(*base, "--out", str(out))
        calls = ep.stats().calls
        written = out.exists()
        after = run_cli(*base, "--out", str(out))
    assert typo.returncode == 2 and "'.xlsx'" in typo.stderr, typo.stderr[-2000:]
    assert locked.returncode == 2, locked.stderr[-2000:]
    assert f"another verifleet run (pid {os.getpid()})" in locked.stderr
    assert calls == 0  # neither ran a unit nor even a preflight call
    assert not written
    assert after.returncode == 0 and len(read_results(out)) == 4  # the lock was released


def test_sigterm_stops_the_run_and_the_journal_keeps_finished_units(tmp_path: Path) -> None:
    path, answers = _bench(tmp_path, n=8)
    out = tmp_path / "out.parquet"
    journal = journal_path(out)
    # One call at a time, each slow: some units finish, the rest are still queued.
    with run_endpoint_in_thread(
        EndpointConfig(answers=answers, latency_ms=400, serve_concurrency=1)
    ) as ep:
        model = f"{ep.base_url}#m"
        args = ["run", str(path), "--answering", model, "--parsing", model, "--out", str(out)]
        proc = subprocess.Popen(
            [*VERIFLEET, *args, "--concurrency", "2"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 120
            while not (journal.exists() and journal.read_text().count("\n") >= 1):
                assert proc.poll() is None, proc.communicate()[1][-2000:]
                assert time.monotonic() < deadline, "no unit finished"
                time.sleep(0.1)
            proc.send_signal(signal.SIGTERM)
            _stdout, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 128 + signal.SIGTERM, stderr[-2000:]
        assert "interrupted" in stderr and "Traceback" not in stderr
        kept = journal.read_text().count("\n")
        assert 1 <= kept < 8
        resumed = run_cli(*args)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resumed: {kept} of 8 units" in resumed.stderr
    assert len(read_results(out)) == 8
