"""Scenarios on the fleet: real redis-server, two real ``verifleet worker``
processes, one SIGKILLed mid-job, the scripted endpoint answering every turn.
A scenario unit is one task that stores its run and its turns at once, so the
killed worker's scenarios come back whole, exactly once; a changed scenario is
another unit, on the fleet and on a local resume of its export."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from _support.fleet import Fleet, run_cli
from _support.scenarios import ANSWERS, DANGLING_PROBLEM, scenario_benchmark, scenario_config

import verifleet
from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import read_results
from verifleet.orchestrator._fleet.job import Job
from verifleet.schemas import Benchmark, BrokenScenario, ScenarioUnit
from verifleet.store import JobStatus, result_key, unit_messages

pytestmark = pytest.mark.integration

STATUS = {
    "branch_pass": ("completed", ["start", "praise"]),
    "branch_fail": ("completed", ["start", "retry"]),
    "loop": ("limit_reached", ["again"] * 3),
    "tally": ("completed", ["count", "count"]),
    "broken": ("error", ["start", "dead"]),
    "dangling-edge": ("error", []),  # failed validation: stored at submit, never sent
}


def test_scenarios_survive_a_killed_worker_exactly_once(
    fleet: Fleet, redis_url: str, tmp_path: Path
) -> None:
    dangling = BrokenScenario.from_error("dangling-edge", DANGLING_PROBLEM)
    bench = scenario_benchmark().model_copy(update={"broken_scenarios": [dangling]})
    replicates = 2
    # Latency keeps each scenario in flight for a second or more, so the victim
    # dies holding scenarios part-way through their turns.
    with run_endpoint_in_thread(EndpointConfig(answers=ANSWERS, latency_ms=100)) as endpoint:
        config = scenario_config(endpoint.base_url, replicate_count=replicates)
        slow_restore = {"VERIFLEET_UNIT_DEADLINE": "600"}
        fleet.start_worker("victim", concurrency=4, **slow_restore)
        fleet.start_worker("survivor", concurrency=4, **slow_restore)
        fleet.wait_ready(["victim", "survivor"])
        job = Job.submit(bench, config, redis_url)
        # The broken scenario's runs are stored at submit: nothing runs them.
        stored_at_submit = job.progress().done_units
        assert stored_at_submit == replicates
        deadline = time.monotonic() + 60
        while job.progress().done_units < stored_at_submit + 2:
            assert time.monotonic() < deadline, "no unit finished in 60 s"
            time.sleep(0.05)
        assert job.progress().in_flight > 0
        fleet.kill("victim")
        progress = job.wait(timeout=150)
    assert progress.status == JobStatus.DONE
    assert "taken by a worker that is gone" in fleet.log("survivor")
    total = (len(bench.questions) + len(bench.scenarios) + 1) * replicates
    assert progress.done_units == progress.total_units == total
    assert (progress.total_scenarios, progress.scenarios_done) == (12, 12)
    assert progress.scenario_errors == 2 * replicates

    result_set = job.result_set()
    runs = result_set.scenario_results or []
    assert sorted((r.scenario_id, r.replicate) for r in runs) == sorted(
        (s, rep) for s in STATUS for rep in range(1, replicates + 1)
    )
    for run in runs:
        assert (run.status, run.path) == STATUS[run.scenario_id]
    # Every stored turn belongs to exactly one stored run: nothing lost, nothing
    # left over from a run the killed worker did not finish.
    turn_ids = sorted(i for run in runs for turn in run.history for i in turn.result_ids)
    stored_turns = [r for r in result_set.results if r.metadata.scenario_id is not None]
    assert sorted(r.metadata.result_id for r in stored_turns) == turn_ids
    keys = [result_key(r, job_id=job.job_id) for r in result_set.results]
    assert len(keys) == len(set(keys)) == progress.results
    assert result_set.errors is not None and len(result_set.errors) == 2 * replicates
    named = sorted(desc.split(",")[0] for desc, _exc in result_set.errors)
    assert named == ["scenario broken"] * replicates + ["scenario dangling-edge"] * replicates
    assert {str(exc) for desc, exc in result_set.errors if "dangling" in desc} == {DANGLING_PROBLEM}

    status = run_cli("status", job.job_id, "--redis", redis_url)
    assert status.returncode == 0, status.stderr
    assert "scenarios 12/12  scenario errors 4" in status.stdout
    out = tmp_path / "collected.parquet"
    collected = run_cli("results", job.job_id, "--redis", redis_url, "--out", str(out))
    assert collected.returncode == 0, collected.stderr
    back = read_results(out)
    assert sorted(back.scenario_results or [], key=_run_key) == sorted(runs, key=_run_key)
    assert len(back.results) == len(result_set.results)


def _run_key(run):  # type: ignore[no-untyped-def]
    return (run.scenario_id, run.replicate)


def _with_loop_turns(max_turns: int) -> Benchmark:
    """The working scenarios, the loop scenario ending after ``max_turns``."""
    document = scenario_benchmark(broken=False, questions=False).model_dump(mode="json")
    for scenario in document["scenarios"]:
        if scenario["id"] == "loop":
            scenario["max_turns"] = max_turns
    return Benchmark.model_validate(document)


def test_a_changed_scenario_runs_again_on_the_fleet_and_on_a_local_resume_of_its_export(
    fleet: Fleet, redis_url: str, tmp_path: Path
) -> None:
    before, after = _with_loop_turns(3), _with_loop_turns(2)
    with run_endpoint_in_thread(EndpointConfig(answers=ANSWERS)) as endpoint:
        config = scenario_config(endpoint.base_url)
        fleet.start_worker("worker", concurrency=4)
        fleet.wait_ready(["worker"])
        job = Job.submit(before, config, redis_url)
        assert job.wait(timeout=150).status == JobStatus.DONE
        done = job.store.done_units(job.job_id)
        # What a resume sends: nothing of the same benchmark, the changed scenario's
        # unit of the changed one.
        assert list(unit_messages(job.job_id, before, config, skip=done)) == []
        again = unit_messages(job.job_id, after, config, skip=done)
        assert [labels["scenario_id"] for _ref, labels in again] == ["loop"]
        # Each run a worker stored records the key its unit has without a job.
        answering = config.answering_models[0]
        scenarios = {s.id: s for s in before.scenarios}
        runs = job.scenario_results() or []
        assert len(runs) == 4
        for run in runs:
            unit = ScenarioUnit(scenarios[run.scenario_id], answering, run.replicate or 1)
            assert run.unit_key == unit.key()

        # The job's export, resumed by a local run of the changed benchmark:
        # only the changed scenario runs again.
        out = tmp_path / "fleet.parquet"
        exported = run_cli("results", job.job_id, "--redis", redis_url, "--out", str(out))
        assert exported.returncode == 0, exported.stderr
        calls = endpoint.stats().calls
        result_set = verifleet.run(after, config, out=out)
        assert endpoint.stats().calls - calls == 2 * 2  # two turns: an answer and a judge call
    runs = result_set.scenario_results or []
    assert sorted(r.scenario_id for r in runs) == ["branch_fail", "branch_pass", "loop", "tally"]
    assert next(r for r in runs if r.scenario_id == "loop").path == ["again"] * 2
