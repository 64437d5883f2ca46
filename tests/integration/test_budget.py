"""``--max-cost``: a job starts no new unit once spent plus in-flight cost reaches
its budget, says so, and a resume with a larger budget finishes it with every
unit run exactly once. The endpoint is the scripted double of
``bench/endpoint.py``: its ``/stats`` counts the answering calls, so a unit run
twice would show."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from _support.fleet import Fleet, run_cli
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import read_results
from verifleet.orchestrator._fleet.job import Job
from verifleet.schemas import (
    CostSummary,
    ModelConfig,
    PriceTable,
    VerificationConfig,
    dump_benchmark,
)
from verifleet.store import CostLedger, JobStatus

pytestmark = pytest.mark.integration

N = 16
WINDOW = 2
# About a cent a token: a unit costs a dollar or two, so a $5 budget holds a few.
PRICES = {"answerer": {"input": 10000, "output": 10000}, "judge": {"input": 10000, "output": 10000}}
BUDGET = 5.0


def _unit_costs(results: object) -> list[float]:
    by_unit: dict[str, float] = {}
    for r in results:  # type: ignore[attr-defined]
        by_unit[r.metadata.question_id] = (
            by_unit.get(r.metadata.question_id, 0.0)
            + r.template.usage_metadata["total"]["cost_usd"]
        )
    return list(by_unit.values())


def test_local_run_stops_at_its_budget_and_a_larger_one_finishes_it(tmp_path: Path) -> None:
    bench, answers = capitals_benchmark(N)
    bench_file = tmp_path / "bench.yaml"
    dump_benchmark(bench, bench_file)
    prices = tmp_path / "prices.yaml"
    PriceTable.model_validate(PRICES)
    prices.write_text(
        "\n".join(f"{m}: {{input: {p['input']}, output: {p['output']}}}" for m, p in PRICES.items())
    )
    out = tmp_path / "out.parquet"
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=50)) as ep:
        args = [
            "run",
            str(bench_file),
            "--answering",
            f"{ep.base_url}#answerer",
            "--parsing",
            f"{ep.base_url}#judge",
            "--pricing",
            str(prices),
            "--concurrency",
            str(WINDOW),
            # No preflight call: the endpoint's count is the units' calls alone.
            "--no-preflight",
            "--out",
            str(out),
        ]
        first = run_cli(*args, "--max-cost", str(BUDGET), timeout=300)
        assert first.returncode == 0, first.stderr[-3000:]
        assert "budget reached" in first.stderr
        stopped = read_results(out)
        costs = _unit_costs(stopped)
        assert 0 < len(costs) < N
        spent = sum(costs)
        # It stopped within one window of in-flight units of the budget.
        assert spent < BUDGET + WINDOW * max(costs)
        assert spent + WINDOW * max(costs) >= BUDGET
        second = run_cli(*args, "--max-cost", "1000", timeout=300)
        assert second.returncode == 0, second.stderr[-3000:]
        assert "budget reached" not in second.stderr
        assert f"resumed: {len(costs)} of {N} units" in second.stderr
        calls = ep.stats().calls
    results = read_results(out)
    assert sorted(r.metadata.question_id for r in results) == sorted(q.id for q in bench.questions)
    assert calls == 2 * N, "every unit answered and judged exactly once over both runs"


def test_fleet_job_stops_at_its_budget_and_resume_finishes_it(fleet: Fleet, redis_url: str) -> None:
    bench, answers = capitals_benchmark(N)
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=50)) as ep:
        config = VerificationConfig.build(
            answering_models=[ModelConfig.parse(f"{ep.base_url}#answerer")],
            parsing_models=[ModelConfig.parse(f"{ep.base_url}#judge")],
            pricing=PriceTable.model_validate(PRICES),
            max_cost_usd=BUDGET,
        )
        fleet.start_worker("w1", concurrency=WINDOW)
        fleet.wait_ready(["w1"])
        job = Job.submit(bench, config, redis_url)
        ledger = CostLedger(job.store.client)
        deadline = time.monotonic() + 120
        while True:
            progress = job.progress()
            cost = ledger.read(job.job_id)
            if cost.stopped_at is not None and progress.in_flight == 0:
                break
            assert time.monotonic() < deadline, (progress, cost)
            assert progress.status != JobStatus.DONE, "the budget never stopped the job"
            time.sleep(0.2)
        # Queued units of the stopped job are refused as workers take them.
        time.sleep(2)
        progress, cost = job.progress(), ledger.read(job.job_id)
        assert 0 < progress.done_units < N
        costs = _unit_costs(job.result_set())
        assert cost.total_usd == pytest.approx(sum(costs))
        assert cost.total_usd < BUDGET + WINDOW * max(costs)
        status = run_cli("status", job.job_id, "--redis", redis_url)
        assert status.returncode == 0 and "budget reached" in status.stdout, status.stdout
        spent = f"cost ${cost.total_usd:.6f} over {cost.units} units (budget ${BUDGET:.6f})"
        assert spent in status.stdout, status.stdout
        assert f"answerer ${cost.models['answerer']:.6f}" in status.stdout
        # watch shows the same and returns: the budget stopped the job.
        watched = run_cli("watch", job.job_id, "--redis", redis_url, timeout=60)
        assert watched.returncode == 0, watched.stderr
        assert spent in watched.stdout and "budget reached" in watched.stdout, watched.stdout
        resumed = run_cli("resume", job.job_id, "--redis", redis_url, "--max-cost", "1000")
        assert resumed.returncode == 0, resumed.stderr
        assert job.wait(timeout=120).status == JobStatus.DONE
        calls = ep.stats().calls
    results = job.result_set()
    assert sorted(r.metadata.question_id for r in results) == sorted(q.id for q in bench.questions)
    assert calls == 2 * N, "every unit answered and judged exactly once"
    summary = CostSummary()
    for r in results:
        summary.add(r)
    final = ledger.read(job.job_id)
    assert final.units == N and final.total_usd == pytest.approx(summary.total_usd)
    assert final.stopped_at is None and final.budget_usd == 1000
