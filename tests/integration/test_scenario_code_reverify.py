"""``verifleet reverify`` of scenario runs that use the original's code features
(state updates, conditions, outcome code, handovers, CrossTurnChecks): a results
file written by ``verifleet run`` from the original's own checkpoint
(tests/fixtures/karenina_scenarios/) is judged again by another judge with
no answering call, and routes, turn counts, final states and outcomes stay
those of the original's own run (expected.json). The endpoints are
``bench/endpoint.py`` serving the same scripted answers, one per role so that
each one's ``/stats`` counts one role's calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support.fleet import run_cli

import verifleet
from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import read_results

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).parents[1] / "fixtures" / "karenina_scenarios"


def _runs(results: object) -> dict[str, dict[str, object]]:
    return {
        run.scenario_id: {
            "status": run.status,
            "path": run.path,
            "turn_count": run.turn_count,
            "accumulated": run.final_state["accumulated"],
            "outcome_results": run.outcome_results,
        }
        for run in results.scenario_results or []  # type: ignore[attr-defined]
    }


def test_reverify_keeps_the_originals_results_for_scenario_code(tmp_path: Path) -> None:
    expected = json.loads((FIXTURES / "expected.json").read_text())
    expected.pop("cut_lambda")  # the original cannot load it; it fails alone
    answers = json.loads((FIXTURES / "answers.json").read_text())
    source = tmp_path / "first.json"
    with (
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as other_judge,
    ):
        config = {
            "answering_models": [f"{answer.base_url}#answerer"],
            "parsing_models": [f"{answer.base_url}#judge"],
        }
        stored = verifleet.run(FIXTURES / "features.jsonld", config, out=source)
        assert _runs(stored) == expected, "the first run is the original's"
        answer.reset()

        judged_file = tmp_path / "judged.json"
        done = run_cli(
            "reverify",
            str(source),
            "--benchmark",
            str(FIXTURES / "features.jsonld"),
            "--parsing",
            f"{other_judge.base_url}#judge2",
            "--out",
            str(judged_file),
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert answer.stats().calls == 0, "reverify makes no answering call"
        assert other_judge.stats().calls > 0, "the other judge judged the turns"
    judged = read_results(judged_file)
    assert _runs(judged) == expected
    # The code's traces (a raising condition is an unmatched edge) survive reverify.
    traces = [t for run in judged.scenario_results or [] for t in run.trace]
    assert any("condition raised" in t for t in traces)
