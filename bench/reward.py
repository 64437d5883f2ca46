"""Reward service benchmark: ``POST /verify`` requests/s and latency percentiles.

Usage::

    .venv/bin/python bench/reward.py                         # 400 requests, 32 clients
    .venv/bin/python bench/reward.py --n 2000 --clients 64 --latency-ms 100
    .venv/bin/python bench/reward.py --repeat                # every response seen before

The judge is the latency-injecting fake endpoint (``bench/endpoint.py``), in a
process of its own so it does not compete with the service for the GIL: each
judge call takes ``--latency-ms`` (exponentially distributed). The service runs
in this process under uvicorn, exactly as ``verifleet serve`` runs it; clients
are threads sending real HTTP requests. Responses are unique unless ``--repeat`` is given, which
sends each response twice (the second pass is answered from the judge-call
cache). ``--mode hybrid`` adds a rubric (one more judge call per request).

Nothing here is asserted: the script prints figures and is not part of the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from verifleet.orchestrator.serve import create_app
from verifleet.reward import RewardConfig
from verifleet.schemas import (
    Benchmark,
    LLMRubricTrait,
    ModelConfig,
    Question,
    Rubric,
)

TEMPLATE = textwrap.dedent(
    """
    from pydantic import Field

    from karenina.schemas.entities import BaseAnswer


    class Answer(BaseAnswer):
        city: str = Field(description="The city the response names as the capital")

        def model_post_init(self, __context):
            self.correct = {"city": "CITY"}

        def verify(self) -> bool:
            return self.city.strip().lower() == self.correct["city"].lower()
    """
)


def _benchmark(n: int, *, rubric: bool) -> Benchmark:
    questions = [
        Question(
            id=f"q{i}",
            text=f"What is the capital of Country{i}?",
            answer_template=TEMPLATE.replace("CITY", f"Capital{i}"),
        )
        for i in range(n)
    ]
    global_rubric = (
        Rubric(llm_traits=[LLMRubricTrait(name="clarity", kind="score")]) if rubric else None
    )
    return Benchmark(name="bench-capitals", questions=questions, global_rubric=global_rubric)


def _reward(mode: str) -> RewardConfig:
    if mode != "hybrid":
        return RewardConfig(mode=mode)  # type: ignore[arg-type]
    return RewardConfig.build(
        {
            "mode": "hybrid",
            "components": [
                {"name": "correctness", "source": "verify_result", "weight": 0.7},
                {"name": "clarity", "source": "trait", "trait": "clarity", "weight": 0.3},
            ],
        }
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _start_endpoint(
    answers: dict[str, Any], latency_ms: float
) -> tuple[subprocess.Popen[str], str]:
    """``bench/endpoint.py`` in a child process; returns it and its base URL."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(answers, handle)
    proc = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("endpoint.py")),
            "--answers",
            handle.name,
            "--latency-ms",
            str(latency_ms),
            "--latency-dist",
            "exp",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "listening on http://127.0.0.1:PORT/v1 port=PORT"
    os.unlink(handle.name)
    if "listening on " not in line:
        proc.kill()
        raise RuntimeError(f"the endpoint did not start: {line!r}")
    return proc, line.split()[2]


def _percentile(sorted_ms: list[float], q: float) -> float:
    index = min(len(sorted_ms) - 1, max(0, round(q * (len(sorted_ms) - 1))))
    return sorted_ms[index]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400, help="requests (default 400)")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients")
    parser.add_argument("--latency-ms", type=float, default=50.0, help="judge latency per call")
    parser.add_argument("--questions", type=int, default=100, help="benchmark size")
    parser.add_argument("--mode", choices=["binary", "continuous", "hybrid"], default="binary")
    parser.add_argument("--repeat", action="store_true", help="send every response twice")
    args = parser.parse_args(argv)

    answers: dict[str, Any] = {}
    bodies: list[dict[str, Any]] = []
    for i in range(args.n):
        q = i % args.questions
        said = f"Capital{q}" if i % 4 else f"Wrong{i}"
        text = f"Rollout {i}: the capital is {said}."
        answers[text] = {"fields": {"city": said, "clarity": 4}}
        bodies.append({"question_id": f"q{q}", "response": text})
    if args.repeat:
        bodies = bodies + bodies

    endpoint, base_url = _start_endpoint(answers, args.latency_ms)
    judge = ModelConfig.parse(f"{base_url}#judge")
    app = create_app(
        _benchmark(args.questions, rubric=args.mode == "hybrid"), [judge], _reward(args.mode)
    )
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)

    local = threading.local()
    latencies: list[float] = []
    failures = 0
    lock = threading.Lock()

    def send(body: dict[str, Any]) -> None:
        nonlocal failures
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = httpx.Client(
                base_url=f"http://127.0.0.1:{port}", timeout=120, trust_env=False
            )
        start = time.perf_counter()
        reply = client.post("/verify", json=body)
        elapsed = (time.perf_counter() - start) * 1000
        with lock:
            latencies.append(elapsed)
            failures += reply.status_code != 200

    try:
        began = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.clients) as pool:
            list(pool.map(send, bodies))
        wall = time.perf_counter() - began
        judge_calls = httpx.get(f"{base_url[:-3]}/stats", trust_env=False).json()["calls"]
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        endpoint.terminate()
        endpoint.wait(timeout=10)

    ordered = sorted(latencies)
    print(
        f"mode={args.mode} requests={len(bodies)} clients={args.clients} "
        f"judge_latency={args.latency_ms:g}ms (exp) repeat={args.repeat}"
    )
    print(f"throughput: {len(bodies) / wall:.1f} requests/s ({wall:.2f}s wall)")
    print(
        "latency ms: "
        f"p50={_percentile(ordered, 0.50):.1f} p90={_percentile(ordered, 0.90):.1f} "
        f"p99={_percentile(ordered, 0.99):.1f} max={ordered[-1]:.1f} "
        f"mean={statistics.fmean(ordered):.1f}"
    )
    print(f"judge calls: {judge_calls}  non-200 replies: {failures}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
