"""Side by side with the original framework: scenarios its own API wrote
(tests/fixtures/karenina_scenarios/, by build_scenarios.py there) using code
state updates, code conditions (one raising), transcript handovers between two
agents, outcome code and CrossTurnChecks, run by verifleet against the same
scripted model (bench/endpoint.py serving the same answers.json): the same paths,
turn counts, final states and outcome results as the original's own run
(expected.json). The original's own defect, a two-argument lambda saved cut at
its first comma, fails that scenario alone here."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.scenarios import scenario_config

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.pipeline import PipelineResources, run_scenario
from verifleet.schemas import load_benchmark

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "karenina_scenarios"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())


@pytest.fixture(scope="module")
def endpoint() -> Iterator[RunningEndpoint]:
    answers = json.loads((FIXTURES / "answers.json").read_text())
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as running:
        yield running


def test_the_originals_checkpoint_runs_to_the_originals_results(endpoint: RunningEndpoint) -> None:
    benchmark = load_benchmark(FIXTURES / "features.jsonld")
    assert benchmark.broken_scenarios == []
    config = scenario_config(endpoint.base_url)
    resources = PipelineResources()
    seen = {}
    for scenario in benchmark.scenarios:
        run = run_scenario(
            scenario,
            config.answering_models[0],
            config.parsing_models,
            config,
            replicate=None,
            resources=resources,
        ).scenario_result
        assert run is not None
        seen[scenario.id] = {
            "status": run.status,
            "path": run.path,
            "turn_count": run.turn_count,
            "accumulated": run.final_state["accumulated"],
            "outcome_results": run.outcome_results,
        }
        # The raising condition was an unmatched edge, as the original logged it.
        assert any("edge start -> retry: condition raised" in t for t in run.trace)
        if run.path[-1] == "praise":
            assert run.history[1].agent_id == "expert" and run.history[1].handover is not None
    assert seen == {k: v for k, v in EXPECTED.items() if k != "cut_lambda"}


def test_the_originals_cut_lambda_fails_alone_naming_the_node() -> None:
    assert EXPECTED["cut_lambda"]["loads"] is False  # the original cannot load it
    assert "lambda acc" in EXPECTED["cut_lambda"]["error"]
    [broken] = load_benchmark(FIXTURES / "cut_lambda.jsonld").broken_scenarios
    assert broken.id == "cut_lambda"
    assert broken.problem.startswith("node 'start': stateUpdateSource: it is not Python")
