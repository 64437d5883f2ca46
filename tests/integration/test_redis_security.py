"""The fleet on a Redis with a password, and on a Redis that speaks only TLS and
demands client certificates: real redis-servers (``requirepass``, ``--tls-port``
with ``--port 0``), real ``verifleet worker`` processes, a real Flower, and the
bench endpoint (a real OpenAI-compatible server) as the models. A wrong password,
a missing CA or a missing client certificate is one clear line, never a hang."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from _support.fleet import VERIFLEET, Fleet, run_cli
from _support.jobs import capitals_benchmark
from _support.redis_server import free_port
from _support.secure_redis import make_certificates, secure_redis

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.orchestrator._fleet.job import Job
from verifleet.orchestrator.cli import main
from verifleet.schemas import ModelConfig, VerificationConfig
from verifleet.store import TASK_NAME, JobStatus, RedisTarget

pytestmark = pytest.mark.integration

PASSWORD = "pa ss/w0rd"  # a space and a slash: the URL must percent-encode it


def _config(ep: RunningEndpoint) -> VerificationConfig:
    return VerificationConfig.build(
        # A fleet-wide concurrency limit: the workers' limiter keys live on this Redis too.
        answering_models=[ModelConfig.parse(f"{ep.base_url}#answerer", max_concurrency=2)],
        parsing_models=[ModelConfig.parse(f"{ep.base_url}#judge")],
    )


def _run_job(
    fleet: Fleet, url: str, before_submit: Callable[[], None] = lambda: None
) -> tuple[Job, Any]:
    """Four questions (one answered wrongly) through one real worker."""
    bench, answers = capitals_benchmark(4)
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        fleet.start_worker("w1", concurrency=4)
        fleet.wait_ready(["w1"])
        before_submit()
        job = Job.submit(bench, _config(ep), url)
        progress = job.wait(timeout=120)
        results = job.result_set()
    return job, (progress, results)


def _assert_job_done(job: Job, outcome: Any) -> None:
    progress, results = outcome
    assert progress.status == JobStatus.DONE
    assert (progress.done_units, progress.failed_units) == (4, 0)
    verdicts = sorted(r.template.verify_result for r in results if r.template)
    assert verdicts == [False, True, True, True]
    assert list(job.store.client.scan_iter(match="vf:limit:*")), "the limiter never used Redis"


def _assert_refused(code: int, stderr: str, *phrases: str) -> None:
    assert code == 2, (code, stderr)
    assert len(stderr.strip().splitlines()) == 1, stderr  # one line, no traceback
    for phrase in phrases:
        assert phrase in stderr, stderr
    assert PASSWORD not in stderr and "wrong-one" not in stderr


def _cli_refuses(capsys: pytest.CaptureFixture[str], argv: list[str], *phrases: str) -> None:
    """The command line, in this process (a subprocess per case costs seconds)."""
    code = main(argv)
    _assert_refused(code, capsys.readouterr().err, *phrases)


def test_fleet_with_a_redis_password(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with secure_redis(tmp_path, password=PASSWORD) as url:
        fleet = Fleet(url, tmp_path)
        try:
            job, outcome = _run_job(fleet, url)
        finally:
            fleet.stop()
        _assert_job_done(job, outcome)
        capsys.readouterr()
        assert main(["status", job.job_id, "--redis", url]) == 0
        assert "done 4/4" in capsys.readouterr().out

        port = urlsplit(url).port
        wrong = f"redis://:wrong-one@127.0.0.1:{port}/0"
        _cli_refuses(capsys, ["jobs", "--redis", wrong], "refused the credentials", ":***@")
        _cli_refuses(capsys, ["status", job.job_id, "--redis", f"redis://127.0.0.1:{port}/0"])
        # A worker process does not retry a refused password forever: it stops at once.
        worker = run_cli("worker", "--redis", wrong, timeout=60)
        _assert_refused(worker.returncode, worker.stderr, "verifleet worker: error:", "refused")


def _poll(fetch: Callable[[], Any], ok: Callable[[Any], bool], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = fetch()
            if ok(last):
                return last
        except httpx.HTTPError as exc:
            last = exc
        time.sleep(0.5)
    raise AssertionError(f"condition not met within {timeout}s; last answer: {last!r}")


def test_fleet_and_flower_over_tls_with_client_certificates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    certs = make_certificates(tmp_path / "pki")
    # The CA comes in the URL; the client certificate from the environment, as an
    # operator would set it once per machine.
    client_env = {
        "VERIFLEET_REDIS_SSL_CERTFILE": str(certs.client_cert),
        "VERIFLEET_REDIS_SSL_KEYFILE": str(certs.client_key),
    }
    with secure_redis(tmp_path, password=PASSWORD, tls=certs) as url:
        for name, value in client_env.items():
            monkeypatch.setenv(name, value)
        assert url.startswith("rediss://")
        fleet = Fleet(url, tmp_path)
        port = free_port()
        flower = subprocess.Popen(
            [*VERIFLEET, "flower", "--port", str(port)],
            stdout=(tmp_path / "flower.log").open("wb"),
            stderr=subprocess.STDOUT,
            env=fleet.env(VERIFLEET_FLOWER_AUTH="admin:fl0wer"),
        )
        client = httpx.Client(
            base_url=f"http://127.0.0.1:{port}", auth=("admin", "fl0wer"), timeout=10
        )

        def flower_sees_the_worker() -> None:
            # Flower lists the worker from its heartbeats. Workers send task
            # events only once Flower asks (every 5 s, docs/fleet.md): after one
            # more round of asking, it sees the job's task events too.
            _poll(
                lambda: client.get("/api/workers", params={"status": "true"}).json(),
                lambda body: any(name.startswith("w1@") and up for name, up in body.items()),
            )
            time.sleep(5.5)

        try:
            job, outcome = _run_job(fleet, url, before_submit=flower_sees_the_worker)
            # Flower's remote-control calls (inspect) go through the broker as well.
            workers = client.get("/api/workers", params={"refresh": "true"}).json()
            assert any(name.startswith("w1@") for name in workers), workers
            tasks = _poll(
                lambda: client.get("/api/tasks").json(),
                lambda body: any(t.get("name") == TASK_NAME for t in body.values()),
            )
            assert any(job.job_id in str(t.get("args")) for t in tasks.values())
            # Flower's queue view talks to Redis itself, with the same TLS options.
            queues = client.get("/api/queues/length")
            assert queues.status_code == 200, queues.text
            assert "active_queues" in queues.json()
            anonymous = httpx.get(f"http://127.0.0.1:{port}/api/workers", timeout=10)
            assert anonymous.status_code == 401
        finally:
            client.close()
            flower.terminate()
            flower.wait(timeout=20)
            fleet.stop()
        _assert_job_done(job, outcome)

        # The store from Python, through the same URL and environment.
        assert RedisTarget.parse(url).client().ping()
        capsys.readouterr()
        assert main(["results", job.job_id, "--redis", url, "--out", str(tmp_path / "r.csv")]) == 0
        assert "4 results written" in capsys.readouterr().out

        bare = url.split("?", 1)[0]  # no ssl_ca_certs: the test CA is not trusted
        _cli_refuses(capsys, ["jobs", "--redis", bare], "certificate", "ca_certs")
        plain = bare.replace("rediss://", "redis://")
        _cli_refuses(capsys, ["jobs", "--redis", plain], "cannot use Redis")
        for name in client_env:
            monkeypatch.delenv(name)
        _cli_refuses(capsys, ["jobs", "--redis", url], "cannot use Redis")
