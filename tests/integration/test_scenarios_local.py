"""``verifleet run`` on a benchmark with scenarios, as a user runs it (a real
process against the scripted endpoint): every scenario outcome, a broken
scenario and one that fails validation in ``errors`` while the others finish,
resume (a changed scenario runs again), and the Parquet / JSON files reading
back equal."""

from __future__ import annotations

from pathlib import Path

import yaml
from _support.fleet import run_cli
from _support.scenarios import (
    ANSWERS,
    DANGLING_PROBLEM,
    dangling_scenario,
    scenario_benchmark,
)

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import read_results, write_results
from verifleet.schemas import Benchmark, ScenarioExecutionError, dump_benchmark, scenario_key

EXPECTED = {
    "branch_pass": ("completed", ["start", "praise"], {"praised": True, "all_correct": True}),
    "branch_fail": ("completed", ["start", "retry"], {"praised": False, "all_correct": False}),
    "loop": ("limit_reached", ["again"] * 3, {"hit_limit": True}),
    "tally": ("completed", ["count", "count"], {"two_counted": True}),
    "broken": ("error", ["start", "dead"], {}),
    "dangling-edge": ("error", [], {}),
}


def test_run_scenarios_locally_then_resume(tmp_path: Path) -> None:
    bench = tmp_path / "bench.yaml"
    dump_benchmark(scenario_benchmark(), bench)
    document = yaml.safe_load(bench.read_text())
    document["scenarios"].append(dangling_scenario())
    bench.write_text(yaml.safe_dump(document))
    config = tmp_path / "config.yaml"
    # One attempt per call: the broken scenario's dead endpoint fails at once.
    config.write_text(yaml.safe_dump({"retry_policy": {"max_attempts": 1}}))
    out = tmp_path / "out.parquet"
    with run_endpoint_in_thread(EndpointConfig(answers=ANSWERS)) as endpoint:
        model = f"{endpoint.base_url}#scripted"
        args = ["run", str(bench), "--answering", model, "--parsing", model]
        args += ["--config", str(config), "--out", str(out)]
        # The broken scenario's failed turn is an errored result: allowed here;
        # no preflight call, so a resumed run makes no call at all.
        args += ["--max-error-rate", "0.5", "--no-preflight"]
        first = run_cli(*args)
        assert first.returncode == 0, first.stderr[-3000:]
        calls = endpoint.stats().calls
        second = run_cli(*args)
        assert second.returncode == 0, second.stderr[-3000:]
        assert endpoint.stats().calls == calls  # nothing ran again
    assert "Scenario runs" in first.stderr
    assert "scenario failed: scenario broken" in first.stderr
    assert "resumed: 7 of 7 units" in second.stderr
    assert f"warning: {DANGLING_PROBLEM} (its results will record the error)" in " ".join(
        first.stderr.split()
    )

    result_set = read_results(out)
    runs = {r.scenario_id: r for r in result_set.scenario_results or []}
    assert set(runs) == set(EXPECTED)
    for scenario_id, (status, path, outcomes) in EXPECTED.items():
        run = runs[scenario_id]
        assert (run.status, run.path) == (status, path), scenario_id
        assert {k: v for k, v in run.outcome_results.items() if k in outcomes} == outcomes
    assert runs["tally"].final_state["accumulated"] == {"count": 2, "genes": ["tp53", "tp53"]}
    assert result_set.errors is not None and len(result_set.errors) == 2
    errors = {description.split(",")[0]: exc for description, exc in result_set.errors}
    assert set(errors) == {"scenario broken", "scenario dangling-edge"}
    assert all(isinstance(exc, ScenarioExecutionError) for exc in errors.values())
    assert str(errors["scenario dangling-edge"]) == DANGLING_PROBLEM

    turns = [r for r in result_set.results if r.metadata.scenario_id is not None]
    assert len(turns) == sum(len(p) for _s, p, _o in EXPECTED.values())
    plain = [r for r in result_set.results if r.metadata.scenario_id is None]
    assert [r.metadata.question_id for r in plain] == ["plain"]
    for run in runs.values():
        ids = {i for turn in run.history for i in turn.result_ids}
        linked = [r for r in turns if r.metadata.scenario_id == run.scenario_id]
        assert {r.metadata.result_id for r in linked} == ids
        assert [r.metadata.scenario_turn for r in sorted(linked, key=_turn)] == list(
            range(len(run.path))
        )

    copy = tmp_path / "copy.json"
    write_results(result_set, copy)
    back = read_results(copy)
    assert back.scenario_results == result_set.scenario_results
    assert sorted(back.results, key=_key) == sorted(result_set.results, key=_key)


def _turn(result):  # type: ignore[no-untyped-def]
    return result.metadata.scenario_turn


def _key(result):  # type: ignore[no-untyped-def]
    return result.metadata.result_id


def _with_loop_turns(max_turns: int) -> Benchmark:
    """The working scenarios, the loop scenario ending after ``max_turns``."""
    document = scenario_benchmark(broken=False, questions=False).model_dump(mode="json")
    for scenario in document["scenarios"]:
        if scenario["id"] == "loop":
            scenario["max_turns"] = max_turns
    return Benchmark.model_validate(document)


def test_a_changed_scenario_runs_again_on_a_local_resume(tmp_path: Path) -> None:
    bench = tmp_path / "bench.yaml"
    out = tmp_path / "out.parquet"
    with run_endpoint_in_thread(EndpointConfig(answers=ANSWERS)) as endpoint:
        model = f"{endpoint.base_url}#scripted"
        args = ["run", str(bench), "--answering", model, "--parsing", model]
        args += ["--out", str(out), "--no-preflight"]
        dump_benchmark(_with_loop_turns(3), bench)
        first = run_cli(*args)
        assert first.returncode == 0, first.stderr[-3000:]
        calls = endpoint.stats().calls
        # The loop scenario now ends after two turns: a different unit. The others
        # are unchanged and stay done.
        dump_benchmark(_with_loop_turns(2), bench)
        second = run_cli(*args)
        assert second.returncode == 0, second.stderr[-3000:]
        rerun = endpoint.stats().calls - calls
        third = run_cli(*args)
        assert third.returncode == 0, third.stderr[-3000:]
        assert endpoint.stats().calls == calls + rerun  # the new run counts as done
    assert "resumed: 3 of 4 units" in second.stderr
    assert "resumed: 4 of 4 units" in third.stderr
    assert rerun == 2 * 2  # two turns, one answer and one judge call each

    result_set = read_results(out)
    runs = {r.scenario_id: r for r in result_set.scenario_results or []}
    assert len(result_set.scenario_results or []) == len(runs) == 4
    assert runs["loop"].path == ["again"] * 2
    # The old run's three turns are gone: every turn kept belongs to a kept run.
    turns = [r for r in result_set.results if r.metadata.scenario_id == "loop"]
    loop = next(s for s in _with_loop_turns(2).scenarios if s.id == "loop")
    assert runs["loop"].unit_key == scenario_key(loop, turns[0].metadata.answering, 1)
    ids = {i for turn in runs["loop"].history for i in turn.result_ids}
    assert sorted(r.metadata.result_id for r in turns) == sorted(ids)
    assert len(turns) == 2
