"""Flower against the fleet's broker: ``verifleet flower`` with basic auth shows the
workers and the job's tasks (with question id and model) while the job runs."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from _support.fleet import VERIFLEET, Fleet
from _support.jobs import capitals_benchmark
from _support.redis_server import free_port

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator._fleet.job import Job
from verifleet.schemas import ModelConfig, VerificationConfig
from verifleet.store import TASK_NAME

pytestmark = pytest.mark.integration


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


def test_flower_lists_workers_and_job_tasks(fleet: Fleet, redis_url: str, tmp_path: Path) -> None:
    port = free_port()
    log = (tmp_path / "flower.log").open("wb")
    flower = subprocess.Popen(
        [
            *VERIFLEET,
            "flower",
            "--redis",
            redis_url,
            "--port",
            str(port),
            "--basic-auth",
            "admin:s3cret",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=fleet.env(),
    )
    base = f"http://127.0.0.1:{port}"
    client = httpx.Client(base_url=base, auth=("admin", "s3cret"), timeout=10, trust_env=False)
    try:
        bench, answers = capitals_benchmark(12)
        with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=400)) as ep:
            config = VerificationConfig.build(
                answering_models=[ModelConfig.parse(f"{ep.base_url}#answerer")],
                parsing_models=[ModelConfig.parse(f"{ep.base_url}#judge")],
            )
            fleet.start_worker("w1", concurrency=2)
            fleet.wait_ready(["w1"])
            _poll(lambda: client.get("/healthcheck"), lambda r: r.status_code == 200)
            anonymous = httpx.get(f"{base}/api/workers", trust_env=False, timeout=10)
            assert anonymous.status_code == 401
            workers = _poll(
                lambda: client.get("/api/workers", params={"refresh": "true"}).json(),
                lambda body: any(name.startswith("w1@") for name in body),
            )
            assert any(name.startswith("w1@") for name in workers)
            # Workers send task events only once Flower asks (every 5 s, for the
            # workers that joined since; docs/fleet.md): one more round of asking.
            time.sleep(5.5)
            job = Job.submit(bench, config, redis_url)
            tasks = _poll(
                lambda: client.get("/api/tasks").json(),
                lambda body: any(t.get("name") == TASK_NAME for t in body.values()),
            )
            ours = [t for t in tasks.values() if t.get("name") == TASK_NAME]
            assert any(job.job_id in str(t.get("args")) for t in ours)
            assert any(
                "q00" in str(t.get("kwargs")) and "answerer" in str(t.get("kwargs")) for t in ours
            ), json.dumps(ours[:2])
            job.wait(timeout=120)
    finally:
        client.close()
        flower.terminate()
        flower.wait(timeout=20)
