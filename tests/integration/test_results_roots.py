"""Results locations are the operator's (issue 34, item 5), on a real fleet.

A submitter chooses ``--results-to``, but workers write the shards: a worker
writes only under its ``--results-root`` (``VERIFLEET_RESULTS_ROOTS``), only on
accepted schemes, only for jobs of the queues it serves; job ids cannot name
paths; an id an existing job holds is refused. Each attack has its control.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.factories import make_result
from _support.fleet import Fleet, run_cli, until
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.errors import JobRejectedError
from verifleet.orchestrator._fleet.job import Job
from verifleet.schemas import ModelConfig, VerificationConfig, dump_benchmark
from verifleet.store import JobStatus, ResultStore, result_key

pytestmark = pytest.mark.integration


class Witness:
    """A listening socket that counts the connections it accepts: what an
    ``ftp://`` location would make a process open."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def witness() -> Iterator[Witness]:
    w = Witness()
    try:
        yield w
    finally:
        w.close()


@pytest.fixture
def endpoint() -> Iterator[tuple[str, dict[str, object]]]:
    _bench, answers = capitals_benchmark(4)
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        yield ep.base_url, answers


def _config(base_url: str) -> VerificationConfig:
    return VerificationConfig.build(
        answering_models=[ModelConfig.parse(f"{base_url}#answerer")],
        parsing_models=[ModelConfig.parse(f"{base_url}#judge")],
    )


def _shards(folder: Path) -> list[Path]:
    return sorted(folder.rglob("part-*.parquet")) if folder.exists() else []


def test_submit_refuses_path_job_ids_and_other_schemes_without_connecting(
    redis_url: str, tmp_path: Path, witness: Witness, endpoint: tuple[str, object]
) -> None:
    bench, _ = capitals_benchmark(4)
    config = _config(endpoint[0])
    root = tmp_path / "root"
    for bad in ("../x", "a/b", "a:b", "x\n", "..", "a" * 129):
        with pytest.raises(JobRejectedError, match="job id"):
            Job.submit(bench, config, redis_url, job_id=bad, results_to=str(root))
    assert not (tmp_path / "x").exists() and not _shards(tmp_path)
    ftp = f"ftp://127.0.0.1:{witness.port}/x"
    for url in (ftp, f"simplecache::{ftp}", f"http://127.0.0.1:{witness.port}/x"):
        with pytest.raises(JobRejectedError, match="not accepted"):
            Job.submit(bench, config, redis_url, results_to=url)
    store = ResultStore.from_url(redis_url)
    assert store.list_jobs() == [], "a refused job was stored"
    # Control: the witness sees a connection when fsspec is handed the URL.
    import fsspec

    with pytest.raises(Exception):  # noqa: B017 - whatever ftplib makes of a mute server
        fsspec.core.url_to_fs(ftp, timeout=2)
    until(lambda: witness.accepted >= 1, "the witness saw no connection", timeout=20)
    seen = witness.accepted
    # Control: a well-formed id on an accepted location is taken.
    job = Job.submit(bench, config, redis_url, job_id="ok.id_1-x", results_to=str(root))
    assert job.job_id == "ok.id_1-x" and store.exists("ok.id_1-x")
    assert witness.accepted == seen, "a refused location was connected to"


def test_a_reused_job_id_is_refused_and_the_first_job_is_untouched(
    fleet: Fleet, redis_url: str, tmp_path: Path, endpoint: tuple[str, object]
) -> None:
    bench, _ = capitals_benchmark(4)
    bench_file = tmp_path / "bench.yaml"
    dump_benchmark(bench, bench_file)
    base = endpoint[0]
    fleet.start_worker("w1", concurrency=4)
    fleet.wait_ready(["w1"], timeout=180)
    args = ["submit", str(bench_file), "--answering", f"{base}#answerer"]
    args += ["--parsing", f"{base}#judge", "--redis", redis_url, "--no-preflight"]
    first = run_cli(*args, "--job-id", "nightly-42", env=fleet.env(), timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    job = Job("nightly-42", redis_url)
    assert job.wait(timeout=180).status == JobStatus.DONE
    spec = job.store.load_spec("nightly-42")
    done = job.progress()
    second = run_cli(*args, "--job-id", "nightly-42", env=fleet.env(), timeout=300)
    assert second.returncode == 2, (second.returncode, second.stderr[-2000:])
    assert "job id 'nightly-42' is taken" in second.stderr
    assert "new --job-id" in second.stderr and "verifleet resume nightly-42" in second.stderr
    # The first job is as it was: done, same spec, same counts.
    after = job.progress()
    assert after.status == JobStatus.DONE
    assert (after.done_units, after.total_units) == (done.done_units, done.total_units)
    assert job.store.load_spec("nightly-42") == spec
    # Control: another id is accepted at once.
    third = run_cli(*args, "--job-id", "nightly-43", env=fleet.env(), timeout=300)
    assert third.returncode == 0, third.stderr[-2000:]


def test_workers_write_only_their_queues_jobs_under_their_roots(
    fleet: Fleet, redis_url: str, tmp_path: Path, witness: Witness, endpoint: tuple[str, object]
) -> None:
    bench, _ = capitals_benchmark(4)
    config = _config(endpoint[0])
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    drain = {"VERIFLEET_DRAIN_INTERVAL": "0.3"}
    # tenant-a runs its units but may write nowhere; tenant-b may write under root.
    fleet.start_worker("a", concurrency=4, queues="tenant-a", VERIFLEET_RESULTS_ROOTS="", **drain)
    fleet.start_worker(
        "b", concurrency=4, queues="tenant-b", VERIFLEET_RESULTS_ROOTS=str(root), **drain
    )
    fleet.wait_ready(["a", "b"], timeout=240)
    job_a = Job.submit(bench, config, redis_url, queue="tenant-a", results_to=str(root / "a"))
    outside = Job.submit(bench, config, redis_url, queue="tenant-b", results_to=str(elsewhere))
    assert job_a.wait(timeout=180).status == JobStatus.DONE
    assert outside.wait(timeout=180).status == JobStatus.DONE
    # A job written straight into the store (no submit to refuse it) with an
    # ftp:// location, on b's queue, with a finished result waiting.
    store = job_a.store
    ftp = f"ftp://127.0.0.1:{witness.port}/x"
    store.create_job(
        "ftp-job", benchmark_json="{}", config_json="{}", total_units=1, queue="tenant-b",
        results_to=ftp,
    )  # fmt: skip
    result = make_result("q1")
    store.write_unit("ftp-job", "u1", [result], [result_key(result, job_id="ftp-job")])
    assert store.status("ftp-job") == JobStatus.DONE
    # The control: b's own job under its root is drained.
    job_b = Job.submit(bench, config, redis_url, queue="tenant-b", results_to=str(root / "b"))
    assert job_b.wait(timeout=180).status == JobStatus.DONE
    results_b = store.keys(job_b.job_id).results
    until(lambda: store.client.hlen(results_b) == 0, "job b's results left in Redis")
    assert _shards(root / "b")
    # Every drainer turn looks at every candidate; a few more turns pass.
    time.sleep(3)
    assert store.client.hlen(store.keys(job_a.job_id).results) == 4, "tenant-a job drained"
    assert not _shards(root / "a")
    assert store.client.hlen(store.keys(outside.job_id).results) == 4
    assert not _shards(elsewhere)
    assert store.client.hlen(store.keys("ftp-job").results) == 1
    assert witness.accepted == 0, "a worker connected to an ftp:// location"
    assert "no results root" in fleet.log("a")
    assert "outside this worker's results roots" in fleet.log("b")
    assert "scheme 'ftp' is not accepted" in fleet.log("b")
    assert job_a.job_id not in fleet.log("b"), "b looked at a tenant-a job"
    # Every result is still readable where it stayed.
    assert len(list(job_a.result_set())) == 4
