"""Scenario runs through the real pipeline against the scripted endpoint
(bench/endpoint.py): branching, fallback, state, turn limit, outcomes, a broken
turn, and the conversation handed to the answering model."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from _support.scenarios import (
    ANSWERS,
    DANGLING_PROBLEM,
    Q_GOOD,
    Q_PRAISE,
    dangling_scenario,
    scenario_benchmark,
    scenario_config,
    spinning_scenario,
)

import verifleet
from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.pipeline import PipelineResources, run_scenario
from verifleet.schemas import (
    Benchmark,
    ScenarioExecutionError,
    dump_benchmark,
    load_benchmark,
)

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[RunningEndpoint]:
    config = EndpointConfig(answers=ANSWERS, record_requests=True)
    with run_endpoint_in_thread(config) as running:
        yield running


def _run(endpoint: RunningEndpoint, scenario_id: str):  # type: ignore[no-untyped-def]
    benchmark = scenario_benchmark()
    config = scenario_config(endpoint.base_url)
    return run_scenario(
        benchmark.get_scenario(scenario_id),
        config.answering_models[0],
        config.parsing_models,
        config,
        replicate=1,
        resources=PipelineResources(),
    )


def test_branch_on_verify_result_and_linking_fields(endpoint: RunningEndpoint) -> None:
    run = _run(endpoint, "branch_pass")
    outcome = run.scenario_result
    assert outcome is not None
    assert outcome.status == "completed"
    assert outcome.path == ["start", "praise"]
    assert [t.verify_result for t in outcome.history] == [True, True]
    assert outcome.outcome_results == {"praised": True, "all_correct": True, "turns": 2}
    assert outcome.outcomes_passed and outcome.error() is None
    linking = [
        (
            r.metadata.scenario_id,
            r.metadata.scenario_node,
            r.metadata.scenario_turn,
            r.metadata.scenario_path,
        )
        for r in run.results
    ]
    assert linking == [
        ("branch_pass", "start", 0, ["start"]),
        ("branch_pass", "praise", 1, ["start", "praise"]),
    ]
    assert [t.result_ids for t in outcome.history] == [[r.metadata.result_id] for r in run.results]


def test_fallback_edge_and_failing_outcomes(endpoint: RunningEndpoint) -> None:
    outcome = _run(endpoint, "branch_fail").scenario_result
    assert outcome is not None
    assert outcome.path == ["start", "retry"]  # verify_result False: only the fallback matches
    assert [t.verify_result for t in outcome.history] == [False, True]
    assert outcome.outcome_results == {"praised": False, "all_correct": False, "turns": 2}
    assert not outcome.outcomes_passed
    assert outcome.status == "completed"


def test_state_accumulates_across_turns(endpoint: RunningEndpoint) -> None:
    outcome = _run(endpoint, "tally").scenario_result
    assert outcome is not None
    assert outcome.path == ["count", "count"]
    assert outcome.final_state["accumulated"] == {"count": 2, "genes": ["tp53", "tp53"]}
    assert outcome.final_state["node_visits"] == {"count": 2}
    assert outcome.outcome_results == {"two_counted": True}


def test_turn_limit_stops_a_cycle(endpoint: RunningEndpoint) -> None:
    outcome = _run(endpoint, "loop").scenario_result
    assert outcome is not None
    assert outcome.status == "limit_reached"
    assert outcome.turn_count == 3 and outcome.path == ["again"] * 3
    assert outcome.outcome_results == {"hit_limit": True}


def test_broken_turn_ends_the_run_in_error(endpoint: RunningEndpoint) -> None:
    run = _run(endpoint, "broken")
    outcome = run.scenario_result
    assert outcome is not None
    assert outcome.status == "error"
    assert outcome.path == ["start", "dead"]
    assert outcome.terminal_failure is not None and outcome.terminal_failure.node_id == "dead"
    assert run.results[-1].metadata.completed_without_errors is False
    entry = outcome.error()
    assert entry is not None
    description, exc = entry
    assert description == "scenario broken, model openai_endpoint:answerer, replicate 1"
    assert isinstance(exc, ScenarioExecutionError) and "at node dead" in str(exc)


def test_answering_model_sees_the_earlier_turns(endpoint: RunningEndpoint) -> None:
    endpoint.app.requests.clear()
    _run(endpoint, "branch_pass")
    answering_calls = [
        body["messages"]
        for body in endpoint.app.requests
        if "response_format" not in body and body.get("model") == "answerer"
    ]
    assert len(answering_calls) == 2
    second = answering_calls[1]
    assert [m["role"] for m in second[-3:]] == ["user", "assistant", "user"]
    assert second[-3]["content"] == Q_GOOD
    assert second[-2]["content"] == "The gene is BCL2."
    assert second[-1]["content"] == Q_PRAISE


def test_the_documented_example_takes_the_fallback_then_the_branch() -> None:
    """docs/scenarios.md's scripted run: a wrong gene, the retry, the follow-up."""
    answers = json.loads((EXAMPLES / "scripted-answers.json").read_text())
    scenario = load_benchmark(EXAMPLES / "benchmark.yaml").scenarios[0]
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as scripted:
        config = scenario_config(scripted.base_url)
        run = run_scenario(
            scenario,
            config.answering_models[0],
            config.parsing_models,
            config,
            replicate=None,
            resources=PipelineResources(),
        )
    outcome = run.scenario_result
    assert outcome is not None and outcome.status == "completed"
    assert outcome.path == ["ask_gene", "retry_gene", "ask_tissue"]
    assert outcome.outcome_results == {
        "reached_followup": True,
        "first_try": False,
        "wrong_turns": 1,
    }
    assert outcome.final_state["accumulated"] == {
        "genes": ["TP53", "BCL2"],
        "retries": 1,
        "cancers": ["follicular lymphoma"],
    }


def test_a_passed_deadline_ends_the_run_as_timeout(endpoint: RunningEndpoint) -> None:
    benchmark = scenario_benchmark()
    config = scenario_config(endpoint.base_url)
    run = run_scenario(
        benchmark.get_scenario("branch_pass"),
        config.answering_models[0],
        config.parsing_models,
        config,
        replicate=None,
        resources=PipelineResources(),
        deadline=time.monotonic() - 1.0,
    )
    outcome = run.scenario_result
    assert outcome is not None and outcome.status == "timeout"
    assert outcome.turn_count == 0 and run.results == []
    assert outcome.terminal_failure is not None and outcome.terminal_failure.node_id == "start"


def test_verifleet_run_returns_scenario_results_and_errors(endpoint: RunningEndpoint) -> None:
    result_set = verifleet.run(scenario_benchmark(), scenario_config(endpoint.base_url))
    runs = {r.scenario_id: r for r in result_set.scenario_results or []}
    assert set(runs) == {"branch_pass", "branch_fail", "loop", "tally", "broken"}
    assert runs["branch_fail"].path == ["start", "retry"]
    assert result_set.errors is not None
    assert [desc for desc, _exc in result_set.errors] == [runs["broken"].error()[0]]  # type: ignore[index]
    turns = sum(r.turn_count for r in runs.values())
    assert len(result_set.results) == 1 + turns  # the plain question and every turn


def test_the_global_dynamic_rubric_applies_to_every_turn(endpoint: RunningEndpoint) -> None:
    from verifleet.schemas import DynamicRubric, RegexTrait

    benchmark = scenario_benchmark()
    config = scenario_config(endpoint.base_url, evaluation_mode="template_and_rubric")
    dynamic = DynamicRubric(
        regex_traits=[RegexTrait(name="names_bcl2", pattern="BCL2", summary="gene names")]
    )
    run = run_scenario(
        benchmark.get_scenario("branch_pass"),
        config.answering_models[0],
        config.parsing_models,
        config,
        replicate=1,
        global_dynamic_rubric=dynamic,
        resources=PipelineResources(),
    )
    assert run.results
    for result in run.results:
        rubric = result.rubric
        assert rubric is not None, result.metadata.error
        considered = {
            *(rubric.dynamic_rubric_promoted_traits or []),
            *(rubric.dynamic_rubric_skipped_traits or {}),
        }
        assert considered == {"names_bcl2"}


def test_a_scenario_failing_validation_fails_alone(
    endpoint: RunningEndpoint, tmp_path: Path
) -> None:
    path = tmp_path / "bench.yaml"
    dump_benchmark(scenario_benchmark(broken=False), path)
    document = yaml.safe_load(path.read_text())
    document["scenarios"].append(dangling_scenario())
    path.write_text(yaml.safe_dump(document))

    result_set = verifleet.run(path, scenario_config(endpoint.base_url))

    runs = {r.scenario_id: r for r in result_set.scenario_results or []}
    assert set(runs) == {"branch_pass", "branch_fail", "loop", "tally", "dangling-edge"}
    assert runs["branch_pass"].status == "completed" and runs["loop"].turn_count == 3
    failed = runs["dangling-edge"]
    assert (failed.status, failed.turn_count, failed.path) == ("error", 0, [])
    assert failed.terminal_failure is not None and failed.terminal_failure.stage == "validation"
    [(description, exc)] = result_set.errors or []
    assert description == "scenario dangling-edge, model openai_endpoint:answerer, replicate 1"
    assert isinstance(exc, ScenarioExecutionError) and str(exc) == DANGLING_PROBLEM


def _spin_benchmark() -> Benchmark:
    base = scenario_benchmark(broken=False, questions=False)
    document = base.model_dump(mode="json")
    document["scenarios"] = [s for s in document["scenarios"] if s["id"] == "branch_pass"] + [
        spinning_scenario(max_turns=20)
    ]
    return Benchmark.model_validate(document)


def test_the_originals_scenario_turn_limit_caps_every_run(endpoint: RunningEndpoint) -> None:
    """An original preset with ``scenario_turn_limit: 5``: a cycling scenario
    (limit 20 of its own, as a checkpoint's) stops after 5 turns; the limit is
    checked before routing, as the original does, so a run reaching it on its
    last node ends ``limit_reached`` too."""
    config = scenario_config(endpoint.base_url).model_dump(mode="json")
    preset = {"name": "capped", "description": "", "config": {**config, "scenario_turn_limit": 5}}
    runs = {
        r.scenario_id: r for r in verifleet.run(_spin_benchmark(), preset).scenario_results or []
    }
    assert (runs["spin"].status, runs["spin"].turn_count) == ("limit_reached", 5)
    assert runs["branch_pass"].status == "completed"
    preset["config"]["scenario_turn_limit"] = 2
    runs = {
        r.scenario_id: r for r in verifleet.run(_spin_benchmark(), preset).scenario_results or []
    }
    assert (runs["spin"].status, runs["spin"].turn_count) == ("limit_reached", 2)
    assert (runs["branch_pass"].status, runs["branch_pass"].path) == (
        "limit_reached",
        ["start", "praise"],
    )
    del preset["config"]["scenario_turn_limit"]
    runs = {
        r.scenario_id: r for r in verifleet.run(_spin_benchmark(), preset).scenario_results or []
    }
    assert (runs["spin"].status, runs["spin"].turn_count) == ("limit_reached", 20)


ORIGINAL_CHECKPOINT = (
    Path(__file__).resolve().parents[1] / "fixtures" / "karenina_results" / "scenarios.jsonld"
)


def test_a_checkpoint_the_original_wrote_runs_with_its_turn_limit_and_a_broken_scenario(
    endpoint: RunningEndpoint, tmp_path: Path
) -> None:
    """The original's ``Benchmark.save`` wrote two scenarios: one that cycles, one
    of two turns. Its preset caps runs at 5 turns; an edge of the second is then
    pointed at a node that does not exist: that scenario fails alone."""
    document = json.loads(ORIGINAL_CHECKPOINT.read_text())
    config = scenario_config(endpoint.base_url).model_dump(mode="json")
    preset = {"name": "capped", "config": {**config, "scenario_turn_limit": 5}}
    runs = {
        r.scenario_id: r for r in verifleet.run(ORIGINAL_CHECKPOINT, preset).scenario_results or []
    }
    assert (runs["spin"].status, runs["spin"].turn_count) == ("limit_reached", 5)
    assert (runs["straight"].status, runs["straight"].path) == ("completed", ["start", "next"])

    [straight] = [p for p in document["hasPart"] if p["name"] == "straight"]
    straight["edges"][0]["target"] = "ghost"
    broken = tmp_path / "broken.jsonld"
    broken.write_text(json.dumps(document))
    result_set = verifleet.run(broken, preset)
    runs = {r.scenario_id: r for r in result_set.scenario_results or []}
    assert runs["spin"].turn_count == 5 and runs["straight"].status == "error"
    [(description, exc)] = result_set.errors or []
    assert description.startswith("scenario straight,")
    assert str(exc) == (
        "scenario 'straight': edge start -> ghost: target 'ghost' is not a node or END; "
        "node 'next' is unreachable from the entry node 'start'"
    )
