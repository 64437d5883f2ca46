"""``verifleet run`` end to end as a user runs it: real processes, real HTTP.

The error cases use the fault-injecting endpoint of ``bench/`` and, for a judge
that returns garbage, a ten-line HTTP server in this file: no real model can be
made to answer non-JSON to a structured-output request on demand.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from _support.fleet import run_cli
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import LocalLLMServer, read_results
from verifleet.schemas import dump_benchmark

pytestmark = pytest.mark.e2e


def test_demo_run_with_the_local_model_and_resume(
    local_llm: LocalLLMServer, tmp_path: Path
) -> None:
    out = tmp_path / "demo.parquet"
    args = [
        "run",
        "examples/demo/benchmark.yaml",
        "--answering",
        local_llm.spec,
        "--parsing",
        local_llm.spec,
        "--concurrency",
        "4",
        "--mode",
        "template_and_rubric",
        "--out",
        str(out),
    ]
    first = run_cli(*args, timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "pass rate" in first.stderr and "12 results written" in first.stderr
    results = read_results(out)
    assert len(results) == 12
    # The demo's rubric traits get a mean with an interval each in the end table.
    assert "Rubric trait means" in first.stderr
    for trait in ("on_topic", "no_refusal", "concise"):
        assert trait in first.stderr.split("Rubric trait means", 1)[1]
    assert all(r.metadata.completed_without_errors for r in results)
    second = run_cli(*args, timeout=300)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "resumed: 12 of 12 units" in second.stderr
    assert len(read_results(out)) == 12


class _Garbage(BaseHTTPRequestHandler):
    """Answers every chat completion with prose, whatever format was asked for."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "garbage",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "I like turtles."},
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 3, "total_tokens": 4},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def garbage_judge() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Garbage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1#garbage"
    finally:
        server.shutdown()


def test_bad_inputs_give_clear_messages_and_the_rest_completes(
    tmp_path: Path, garbage_judge: str
) -> None:
    bench, answers = capitals_benchmark(4, wrong_every=0)
    bench.questions[2].answer_template = "class Answer(:\n"
    path = tmp_path / "bench.yaml"
    dump_benchmark(bench, path)
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        good = f"{ep.base_url}#model"
        out = tmp_path / "out.jsonl"
        proc = run_cli(
            "run",
            str(path),
            "--answering",
            good,
            "--parsing",
            good,
            garbage_judge,
            "--out",
            str(out),
        )
        unreachable = run_cli(
            "run",
            str(path),
            "--answering",
            "http://127.0.0.1:9/v1#m",
            "--parsing",
            good,
            "--out",
            str(tmp_path / "u.jsonl"),
            # Past the check that would refuse it, to see what each unit records.
            "--no-preflight",
        )
    # Errored results make the exit status 1 (--max-error-rate would accept them).
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert "q0002" in proc.stderr and "warning" in proc.stderr
    by_judge: dict[str, list] = {}
    for r in read_results(out):
        by_judge.setdefault(r.metadata.parsing.model_name, []).append(r)
    good_results = {r.metadata.question_id: r for r in by_judge["model"]}
    assert good_results["q0002"].metadata.completed_without_errors is False
    assert "template validation failed" in (good_results["q0002"].metadata.error or "")
    assert all(good_results[q].template.verify_result for q in ("q0000", "q0001", "q0003"))
    for r in by_judge["garbage"]:
        assert r.metadata.completed_without_errors is False
        assert r.metadata.error and (
            "parsing failed" in r.metadata.error or "template validation failed" in r.metadata.error
        )

    assert unreachable.returncode == 1, unreachable.stderr[-3000:]
    assert "Traceback" not in unreachable.stderr
    errors = {
        r.metadata.question_id: r.metadata.error or "" for r in read_results(tmp_path / "u.jsonl")
    }
    assert len(errors) == 4 and "template validation failed" in errors.pop("q0002")
    for error in errors.values():
        assert "answer generation failed: connection error" in error, error
        assert "after 4 attempts" in error


def test_missing_api_key_is_a_clear_cli_error(tmp_path: Path) -> None:
    bench, _ = capitals_benchmark(2)
    path = tmp_path / "bench.yaml"
    dump_benchmark(bench, path)
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = run_cli(
        "run",
        str(path),
        "--answering",
        "openai:gpt-4.1-mini",
        "--parsing",
        "openai:gpt-4.1-mini",
        "--out",
        str(tmp_path / "o.parquet"),
        env=env,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "OPENAI_API_KEY" in proc.stderr
