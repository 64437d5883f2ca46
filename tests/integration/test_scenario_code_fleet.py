"""The original's scenario features on the fleet: the side-by-side checkpoint
(tests/fixtures/karenina_scenarios/: code state updates and conditions,
transcript handovers between agents, outcome code, CrossTurnChecks) on a real
redis-server and two real ``verifleet worker`` processes, one SIGKILLed mid-job:
every run is stored exactly once and equals the original's own results; the
export keeps each run's trace and each turn's provenance."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from _support.fleet import Fleet, run_cli
from _support.scenarios import scenario_config

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import read_results
from verifleet.orchestrator._fleet.job import Job
from verifleet.schemas import load_benchmark
from verifleet.store import JobStatus, result_key

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).parents[1] / "fixtures" / "karenina_scenarios"


def test_the_originals_features_run_exactly_once_on_the_fleet(
    fleet: Fleet, redis_url: str, tmp_path: Path
) -> None:
    expected = json.loads((FIXTURES / "expected.json").read_text())
    bench = load_benchmark(FIXTURES / "features.jsonld")
    replicates = 3
    answers = json.loads((FIXTURES / "answers.json").read_text())
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=100)) as endpoint:
        config = scenario_config(endpoint.base_url, replicate_count=replicates)
        fleet.start_worker("victim", concurrency=2, VERIFLEET_UNIT_DEADLINE="600")
        fleet.start_worker("survivor", concurrency=2, VERIFLEET_UNIT_DEADLINE="600")
        fleet.wait_ready(["victim", "survivor"])
        job = Job.submit(bench, config, redis_url)
        deadline = time.monotonic() + 90
        while job.progress().done_units < 1:
            assert time.monotonic() < deadline, "no unit finished in 90 s"
            time.sleep(0.05)
        fleet.kill("victim")
        progress = job.wait(timeout=240)
    assert progress.status == JobStatus.DONE
    assert progress.done_units == progress.total_units == len(bench.scenarios) * replicates
    result_set = job.result_set()
    runs = result_set.scenario_results or []
    assert sorted((r.scenario_id, r.replicate) for r in runs) == sorted(
        (s.id, rep) for s in bench.scenarios for rep in range(1, replicates + 1)
    )
    for run in runs:
        want = expected[run.scenario_id]
        got = {
            "status": run.status,
            "path": run.path,
            "turn_count": run.turn_count,
            "accumulated": run.final_state["accumulated"],
            "outcome_results": run.outcome_results,
        }
        assert got == want, run.scenario_id
        assert any("condition raised" in t for t in run.trace)
    turn_ids = sorted(i for run in runs for turn in run.history for i in turn.result_ids)
    assert sorted(r.metadata.result_id for r in result_set.results) == turn_ids
    keys = [result_key(r, job_id=job.job_id) for r in result_set.results]
    assert len(keys) == len(set(keys))
    out = tmp_path / "collected.parquet"
    collected = run_cli("results", job.job_id, "--redis", redis_url, "--out", str(out))
    assert collected.returncode == 0, collected.stderr
    back = read_results(out).scenario_results or []
    key = lambda r: (r.scenario_id, r.replicate)  # noqa: E731
    assert sorted(back, key=key) == sorted(runs, key=key)
    handed = [t for r in back for t in r.history if t.handover]
    assert handed and all(t.agent_id == "expert" and t.prompt for t in handed)
