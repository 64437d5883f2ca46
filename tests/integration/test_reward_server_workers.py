"""``verifleet serve --workers 2 --redis URL``: two server processes on one port,
started the way a user starts them, share the judge-call cache through Redis, so a
response verified by one is not judged again by the other. The judge is the bench
endpoint (a real OpenAI-compatible server); Redis is a real redis-server."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
import pytest
import redis
from _support.fleet import VERIFLEET
from _support.redis_server import free_port
from _support.reward import CORRECT, JUDGE_ANSWERS, WRONG, geo_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.schemas import dump_benchmark

pytestmark = pytest.mark.integration


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def test_workers_share_the_judge_cache_through_redis(redis_url: str, tmp_path: Path) -> None:
    bench = tmp_path / "geo.yaml"
    dump_benchmark(geo_benchmark(), bench)
    port = free_port()
    texts = [f"{CORRECT} (rollout {i})" for i in range(12)]
    texts += [f"{WRONG} (rollout {i})" for i in range(12)]
    with (
        run_endpoint_in_thread(EndpointConfig(answers=JUDGE_ANSWERS)) as judge,
        (tmp_path / "serve.log").open("wb") as log,
    ):
        proc = subprocess.Popen(
            [
                *VERIFLEET,
                "serve",
                str(bench),
                "--parsing",
                f"{judge.base_url}#judge",
                "--port",
                str(port),
                "--workers",
                "2",
                "--redis",
                redis_url,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 120
            while True:
                assert proc.poll() is None, (tmp_path / "serve.log").read_text()
                try:
                    if httpx.get(f"{base}/health", trust_env=False).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "verifleet serve --workers did not start"
                time.sleep(0.3)
            with httpx.Client(base_url=base, timeout=60, trust_env=False) as client:
                first = [
                    client.post("/verify", json={"question_id": "geo", "response": t})
                    for t in texts
                ]
                calls = judge.stats().calls
                # Fresh connections: the kernel spreads them over both processes.
            again = [
                httpx.post(
                    f"{base}/verify",
                    json={"question_id": "geo", "response": t},
                    timeout=60,
                    trust_env=False,
                )
                for t in texts
            ]
            workers = [p for p in _children(proc.pid) if b"spawn_main" in _cmdline(p)]
            calls_after = judge.stats().calls
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert len(workers) == 2
    expected = [1.0] * 12 + [0.0] * 12
    assert [r.json()["reward"] for r in first] == expected
    assert [r.json()["reward"] for r in again] == expected
    assert calls == 24
    assert calls_after == calls  # every repeat came from a cache, the other process's too
    assert len(list(redis.Redis.from_url(redis_url).scan_iter(match="vf:cc:*"))) >= 24


def _cmdline(pid: int) -> bytes:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""
