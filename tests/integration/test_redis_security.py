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
from verifleet.orchestrator.store import TASK_NAME, JobStatus, RedisTarget
from verifleet.schemas import ModelConfig, VerificationConfig

pytestmark = pytest.mark.integration

PASSWORD = "pa ss/w0rd"  # a space and a slash: the URL must percent-encode it


def _config(ep: RunningEndpoint) -> VerificationConfig:
    return VerificationConfig.build(
        # A fleet-wide concurrency limit: the workers' limiter keys live on this Redis too.
        answering_models=[ModelConfig.parse(f"{ep.base_url}#answerer", max_concurrency=2)],
        parsing_models=[ModelConfig.parse(f"{ep.base_url}#judge")],
    )


def _run_job(fleet: Fleet, url: str, **worker_env: str) -> tuple[Job, Any]:
    """Four questions (one answered wrongly) through one real worker."""
    bench, answers = capitals_benchmark(4)
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        fleet.start_worker("w1", concurrency=4, **worker_env)
        fleet.wait_ready(["w1"])
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


def _refused(proc: subprocess.CompletedProcess[str], *phrases: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr  # one line, no traceback
    for phrase in phrases:
        assert phrase in proc.stderr, proc.stderr
    assert PASSWORD not in proc.stderr and "wrong-one" not in proc.stderr


def test_fleet_with_a_redis_password(tmp_path: Path) -> None:
    with secure_redis(tmp_path, password=PASSWORD) as url:
        fleet = Fleet(url, tmp_path)
        try:
            job, outcome = _run_job(fleet, url)
        finally:
            fleet.stop()
        _assert_job_done(job, outcome)
        listing = run_cli("jobs", "--redis", url)
        assert listing.returncode == 0 and job.job_id in listing.stdout, listing.stderr

        port = urlsplit(url).port
        wrong = f"redis://:wrong-one@127.0.0.1:{port}/0"
        _refused(run_cli("jobs", "--redis", wrong), "refused the credentials", ":***@")
        _refused(run_cli("status", job.job_id, "--redis", f"redis://127.0.0.1:{port}/0"))
        # A worker does not retry a refused password forever: it stops at once.
        worker = run_cli("worker", "--redis", wrong, timeout=60)
        _refused(worker, "verifleet worker: error:", "refused the credentials")


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
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
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
        try:
            job, outcome = _run_job(fleet, url)
            workers = _poll(
                lambda: client.get("/api/workers", params={"refresh": "true"}).json(),
                lambda body: any(name.startswith("w1@") for name in body),
            )
            assert any(name.startswith("w1@") for name in workers)
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
        exported = run_cli("results", job.job_id, "--redis", url, "--out", str(tmp_path / "r.csv"))
        assert exported.returncode == 0, exported.stderr
        assert "4 results written" in exported.stdout

        without_client_cert = {k: v for k, v in fleet.env().items() if k not in client_env}
        _refused(run_cli("jobs", "--redis", url, env=without_client_cert), "cannot use Redis")
        bare = url.split("?", 1)[0]  # no ssl_ca_certs: the test CA is not trusted
        _refused(run_cli("jobs", "--redis", bare, env=fleet.env()), "certificate", "ca_certs")
        plain = bare.replace("rediss://", "redis://")
        _refused(run_cli("jobs", "--redis", plain, env=fleet.env()), "cannot use Redis")
