"""A model endpoint cannot cancel a budget (issue 34, item 4).

A judge that reports ``prompt_tokens: -10000000`` (or NaN, or a string) used to
price its calls below zero: a ``--max-cost`` run bought every answer. The judge
here is a real HTTP endpoint behind a gateway that rewrites its usage block; the
control is the same run with the endpoint's sane usage, which stops at the
budget. The attacked run must stop the same way, with no negative cost anywhere.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from _support.asgi_thread import serve_in_thread
from _support.fleet import run_cli
from _support.gateway import Gateway
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig
from verifleet.orchestrator import read_results
from verifleet.schemas import dump_benchmark

pytestmark = pytest.mark.integration

N = 16
WINDOW = 2
BUDGET = 5.0
# About a cent a token: a unit costs a dollar or two, so a $5 budget holds a few.
PRICES = "answerer: {input: 10000, output: 10000}\njudge: {input: 10000, output: 10000}\n"
KEY = "sk-budget-test"

LIES: dict[str, dict[str, Any]] = {
    "sane": {},
    "negative": {"prompt_tokens": -10_000_000, "total_tokens": -10_000_000},
    "negative-completion": {"completion_tokens": -10_000_000},
    "not-numbers": {"prompt_tokens": "-1e9", "completion_tokens": None, "total_tokens": [1]},
}


def _run(tmp_path: Path, lie: dict[str, Any]) -> tuple[Any, str, int]:
    bench, answers = capitals_benchmark(N)
    bench_file = tmp_path / "bench.yaml"
    dump_benchmark(bench, bench_file)
    prices = tmp_path / "prices.yaml"
    prices.write_text(PRICES)
    out = tmp_path / "out.parquet"
    gateway = Gateway(
        {KEY: EndpointConfig(answers=answers, latency_ms=50)}, usage={"judge": lie} if lie else {}
    )
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    with serve_in_thread(gateway, lifespan="off") as served:
        base = f"{served.url}/v1"
        done = run_cli(
            "run",
            str(bench_file),
            "--answering",
            f"{base}#answerer",
            "--parsing",
            f"{base}#judge",
            "--pricing",
            str(prices),
            "--concurrency",
            str(WINDOW),
            "--no-preflight",
            "--max-cost",
            str(BUDGET),
            "--out",
            str(out),
            env=env,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    return read_results(out), done.stderr, gateway.calls[KEY]


@pytest.mark.parametrize("name", list(LIES))
def test_a_judge_reporting_bogus_usage_cannot_lift_the_budget(tmp_path: Path, name: str) -> None:
    results, stderr, calls = _run(tmp_path, LIES[name])
    by_unit: dict[str, float] = {}
    for r in results:
        usage = r.template.usage_metadata or {}
        for stage, entry in usage.items():
            assert entry.get("cost_usd", 0.0) >= 0, (stage, entry)
            for kind in ("input_tokens", "output_tokens", "total_tokens"):
                assert isinstance(entry[kind], int) and entry[kind] >= 0, (stage, entry)
        qid = r.metadata.question_id
        by_unit[qid] = by_unit.get(qid, 0.0) + usage["total"]["cost_usd"]
    spent = sum(by_unit.values())
    # The control (sane) and every lie alike: the budget stops the run, within
    # one window of in-flight units of it.
    assert "budget reached" in stderr, (name, stderr[-2000:])
    assert spent < BUDGET + WINDOW * max(by_unit.values()), (name, spent)
    judge = [e for r in results for s, e in r.template.usage_metadata.items() if s != "total"]
    judge = [e for e in judge if e["model"] == "judge"]
    if name == "not-numbers":
        # Garbage counts read as 0: the judge is free, so more units fit; none is
        # negative and the run neither crashed nor overspent (above).
        assert all(e["input_tokens"] == e["output_tokens"] == 0 for e in judge)
        return
    # The judge's real prompt tokens (sane, negative-completion) or none at all
    # (negative): either way the answers' cost alone stops the run early.
    assert 0 < len(by_unit) < N, (name, len(by_unit))
    assert calls < 2 * N
    if name == "sane":
        # The control sees the judge's tokens: the lie below is what zeroes them.
        assert all(e["input_tokens"] > 0 for e in judge)
    elif name == "negative":
        assert all(e["input_tokens"] == 0 == e["total_tokens"] for e in judge)
