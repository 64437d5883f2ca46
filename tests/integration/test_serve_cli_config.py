"""What ``verifleet serve``'s flags set on its scorer reaches the served requests.

The CLI builds its scorer (judges, cache, prices, sandbox scope) and the app serves
that scorer: an app that rebuilt one from the benchmark, judges and reward config
lost ``--cache`` and ``--pricing``. The judge is the bench endpoint (a real
OpenAI-compatible server with deterministic replies).
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest
from _support.reward import CORRECT, JUDGE_ANSWERS, geo_benchmark
from fastapi.testclient import TestClient

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator.cli import build_parser
from verifleet.orchestrator.cli._reward_args import checked_scorer, reward_recipe
from verifleet.orchestrator.cli.serve import server_plan
from verifleet.reward.serve import build_app
from verifleet.schemas import dump_benchmark

pytestmark = pytest.mark.integration


def test_served_requests_use_the_call_cache_that_serve_cache_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERIFLEET_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "bench.yaml"
    dump_benchmark(geo_benchmark(), path)
    with run_endpoint_in_thread(EndpointConfig(answers=JUDGE_ANSWERS)) as judge:
        argv = ["serve", str(path), "--parsing", f"{judge.base_url}#judge", "--cache"]
        args = build_parser().parse_args(argv)
        with contextlib.ExitStack() as stack:
            recipe, benchmark = reward_recipe(args, stack, redis_url=None)
            scorer = checked_scorer(recipe, benchmark)
            app = build_app(server_plan(args, recipe, []), scorer)
            assert app.state.scorer is scorer, "the app serves the CLI's scorer"
            client = TestClient(app, base_url="http://127.0.0.1")
            body = {"question_id": "geo", "response": CORRECT}
            reply = client.post("/verify", json=body)
            assert reply.status_code == 200, reply.text
            assert reply.json()["reward"] == 1.0
        calls = judge.stats().calls
    # The judge's call was written to the fleet's call cache (on disk here).
    with sqlite3.connect(tmp_path / "cache" / "calls.sqlite3") as db:
        (stored,) = db.execute("SELECT COUNT(*) FROM calls").fetchone()
    assert calls == 1 and stored == 1
