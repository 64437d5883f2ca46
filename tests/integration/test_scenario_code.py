"""The original framework's scenario features beyond the declarative subset:
CrossTurnCheck outcomes, scenario code in the sandbox (state updates, conditions,
outcome code, handover code), transcript handovers with agent provenance, and
honest summaries. Runs go through the real pipeline, the scripted endpoint
(bench/endpoint.py) and the real sandbox (bubblewrap + seccomp)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support.scenarios import ANSWERS, Q_BAD, Q_GOOD, Q_PRAISE, Q_RETRY, scenario_config, template

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.orchestrator._local.tally import ScenarioTally
from verifleet.pipeline import PipelineResources, run_scenario
from verifleet.pipeline._scenario._code import TRANSCRIPT_SEPARATOR
from verifleet.pipeline._scenario._outcomes import evaluate_outcomes
from verifleet.sandbox import SandboxPool, SandboxSettings
from verifleet.schemas import (
    BrokenScenario,
    ModelIdentity,
    OutcomeCriterion,
    ScenarioDefinition,
    ScenarioExecutionResult,
    ScenarioTurnRecord,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def endpoint() -> Iterator[RunningEndpoint]:
    with run_endpoint_in_thread(EndpointConfig(answers=ANSWERS, record_requests=True)) as running:
        yield running


@pytest.fixture(scope="module")
def resources() -> Iterator[PipelineResources]:
    # A short wall clock so the hanging state update below fails in seconds.
    pool = SandboxPool(SandboxSettings.from_env().model_copy(update={"timeout": 3.0}))
    yield PipelineResources(sandbox=pool)
    pool.close()


def _node(node_id: str, text: str, expected: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "question": {"text": text, "answer_template": template(expected)},
        **extra,
    }


def _run(endpoint: RunningEndpoint, resources: PipelineResources, scenario: dict[str, Any]):  # type: ignore[no-untyped-def]
    config = scenario_config(endpoint.base_url)
    run = run_scenario(
        ScenarioDefinition.model_validate(scenario),
        config.answering_models[0],
        config.parsing_models,
        config,
        replicate=1,
        resources=resources,
    )
    assert run.scenario_result is not None
    return run.scenario_result


# --- CrossTurnCheck ---------------------------------------------------------------------


def _history(*turns: tuple[str, dict[str, Any], str]) -> ScenarioExecutionResult:
    return ScenarioExecutionResult(
        scenario_id="s",
        status="completed",
        path=[t[0] for t in turns],
        turn_count=len(turns),
        history=[
            ScenarioTurnRecord(
                turn=i, node_id=n, question_id=n, question_text=n, parsed_fields=p, raw_response=r
            )
            for i, (n, p, r) in enumerate(turns)
        ],
    )


def _cross(**fields: Any) -> dict[str, Any]:
    return {
        "type": "CrossTurnCheck",
        "source_turn": {"type": "FirstTurn"},
        "target_turn": {"type": "LastTurn"},
        "source_field": "parsed.value",
        "target_field": "parsed.value",
        **fields,
    }


def test_cross_turn_check_compares_target_with_source_as_the_original() -> None:
    run = _history(
        ("ask", {"value": "BCL2 ", "n": 2}, "The gene is BCL2."),
        ("again", {"value": "bcl-2", "n": 5}, "It is still BCL2, the same gene."),
    )
    criteria = [
        OutcomeCriterion.model_validate({"name": name, "check": check})
        for name, check in [
            ("eq_raw", _cross(comparison="eq")),
            (
                "eq_normal",
                _cross(comparison="eq", normalize=["lowercase", "strip", "remove_punctuation"]),
            ),
            (
                "synonym",
                _cross(comparison="eq", normalize=["strip", {"mapping": {"bcl-2": "BCL2"}}]),
            ),
            ("neq", _cross(comparison="neq")),
            ("grew", _cross(comparison="gt", source_field="parsed.n", target_field="parsed.n")),
            ("shrank", _cross(comparison="lt", source_field="parsed.n", target_field="parsed.n")),
            (
                "repeats",
                _cross(
                    comparison="contains",
                    source_field="parsed.value",
                    target_field="raw_response",
                    normalize=["strip"],
                ),
            ),
            ("no_turn", _cross(comparison="eq", target_turn={"type": "turn_at", "index": 7})),
            ("any_is_no_single_turn", _cross(comparison="neq", target_turn={"type": "any_turn"})),
            (
                "uncomparable",
                _cross(comparison="gt", source_field="parsed.value", target_field="parsed.n"),
            ),
            (
                "composed",
                {
                    "type": "AtLeastN",
                    "n": 2,
                    "conditions": [
                        _cross(comparison="neq"),
                        {"type": "AnyOf", "conditions": [_cross(comparison="eq")]},
                        {
                            "type": "AllOf",
                            "conditions": [
                                _cross(
                                    comparison="neq", source_field="node_id", target_field="node_id"
                                )
                            ],
                        },
                    ],
                },
            ),
        ]
    ]
    assert evaluate_outcomes(criteria, run) == {
        "eq_raw": False,
        "eq_normal": True,
        "synonym": True,
        "neq": True,
        "grew": True,
        "shrank": False,
        "repeats": True,
        "no_turn": False,
        "any_is_no_single_turn": False,
        "uncomparable": False,
        "composed": True,
    }


def test_cross_turn_check_refuses_an_unknown_normalizer_by_criterion() -> None:
    with pytest.raises(ValueError, match="unknown normalizer 'shout'"):
        OutcomeCriterion.model_validate(
            {"name": "x", "check": _cross(comparison="eq", normalize=["shout"])}
        )


def test_summary_counts_only_runs_whose_outcomes_were_evaluated() -> None:
    tally = ScenarioTally()
    broken = BrokenScenario(id="b", problem="edge a -> b: nope")
    for replicate in range(4):
        tally.add(broken.failed_run(ModelIdentity(model_name="m"), replicate))
    judged = _history(("ask", {}, ""))
    judged.outcome_results = {"ok": True}
    tally.add(judged)
    assert tally.runs == 5 and tally.by_status["error"] == 4
    assert tally.outcomes_passed == 1


# --- code in the sandbox, handovers, provenance ----------------------------------------


def _coded() -> dict[str, Any]:
    """start → praise when the code condition holds (it reads the state as the
    original's objects), with a transcript handover and a second agent; the
    state update's result replaces the accumulated state."""
    return {
        "id": "coded",
        "nodes": [
            _node(
                "start",
                Q_GOOD,
                "bcl2",
                agent_identity="asker",
                state_update=[{"key": "declared", "op": "set", "value": 1}],
                state_update_source=(
                    "lambda acc, parsed: {'genes': acc.get('genes', []) + [parsed['value']],"
                    " 'kept': sorted(acc)}"
                ),
            ),
            _node("praise", Q_PRAISE, "pancreas", agent_identity="expert"),
            _node("retry", Q_RETRY, "kras"),
        ],
        "edges": [
            {
                "source": "start",
                "target": "retry",
                "condition_source": "lambda state: state.missing_attribute",
            },
            {
                "source": "start",
                "target": "praise",
                "condition_source": (
                    "def routed(state):\n"
                    "    return state.verify_result and state.history[-1].node_id == 'start'"
                    " and state.accumulated['genes'] == ['bcl2']"
                ),
                "handover": "transcript_prepend",
            },
            {"source": "start", "target": "retry"},
            {"source": "praise", "target": "END"},
        ],
        "outcome_criteria": [
            {
                "name": "two_agents",
                "evaluate_source": (
                    "lambda r: r.status == 'completed' and len(r.history) == 2"
                    " and r.final_state.accumulated['genes'] == ['bcl2']"
                ),
            },
            {"name": "raises", "evaluate_source": "lambda r: r.history[9]"},
            {
                "name": "same_gene_answer",
                "check": _cross(comparison="neq"),
            },
        ],
    }


def test_scenario_code_runs_in_the_sandbox_with_the_original_semantics(
    endpoint: RunningEndpoint, resources: PipelineResources
) -> None:
    endpoint.app.requests.clear()
    outcome = _run(endpoint, resources, _coded())
    assert outcome.status == "completed" and outcome.path == ["start", "praise"]
    # The code's dict replaced the accumulated state (the declarative update ran first).
    assert outcome.final_state["accumulated"] == {"genes": ["bcl2"], "kept": ["declared"]}
    assert outcome.outcome_results == {
        "two_agents": True,
        "raises": False,
        "same_gene_answer": True,
    }
    assert any("edge start -> retry: condition raised" in t for t in outcome.trace)
    assert any("outcome criterion 'raises' raised" in t for t in outcome.trace)
    first, second = outcome.history
    assert (first.agent_id, first.handover, first.prompt) == ("asker", None, None)
    assert (second.agent_id, second.handover) == ("expert", "transcript_prepend")
    # As the original: the agent's system prompt is tagged when the agent first speaks.
    system = scenario_config(endpoint.base_url).answering_models[0].system_prompt
    transcript = f"[asker:system:text] {system}\n[__user__] {Q_GOOD}\n[asker:assistant:text] The gene is BCL2."
    assert second.prompt == transcript + TRANSCRIPT_SEPARATOR + Q_PRAISE
    assert second.question_text == Q_PRAISE
    # What the answering model got for the second turn: the transcript in the
    # question and no other history.
    answering = [
        body["messages"]
        for body in endpoint.app.requests
        if "response_format" not in body and body.get("model") == "answerer"
    ]
    last = [m for m in answering[-1] if m["role"] != "system"]
    assert last == [{"role": "user", "content": second.prompt}]


def test_a_raising_state_update_keeps_the_state_and_a_failing_one_names_its_node(
    endpoint: RunningEndpoint, resources: PipelineResources
) -> None:
    raising = {
        "id": "raising",
        "nodes": [_node("start", Q_BAD, "bcl2", state_update_source="lambda a, p: p['nope']")],
    }
    outcome = _run(endpoint, resources, raising)
    assert outcome.status == "completed" and outcome.final_state["accumulated"] == {}
    assert outcome.trace == [
        "node 'start': state update raised, accumulated state kept: KeyError: 'nope'"
    ]
    hanging = {
        "id": "hanging",
        "nodes": [
            _node("start", Q_BAD, "bcl2", state_update_source="lambda a, p: any(iter(int, 1))")
        ],
        "outcome_criteria": [{"name": "turns", "check": {"type": "count_turns"}}],
    }
    outcome = _run(endpoint, resources, hanging)
    assert outcome.status == "error"
    assert outcome.terminal_failure is not None
    assert outcome.terminal_failure.node_id == "start"
    assert outcome.terminal_failure.stage == "state_update"
    # The wall clock or the CPU limit (equal here) stops the loop: which one
    # comes first depends on how busy the machine is.
    reason = outcome.terminal_failure.reason
    assert reason.startswith("node 'start': state update: ")
    assert "ran too long" in reason or "ran out of CPU time" in reason, reason
    assert outcome.outcome_results == {"turns": 1}  # evaluated although the run failed


# seccomp mode leaves the filesystem readable to the executor's uid: there the
# static guard and the restricted builtins (as for a template) are what refuse.
@pytest.mark.parametrize("mode", ["strict", "seccomp"])
def test_a_hostile_state_update_is_contained_like_a_hostile_template(
    endpoint: RunningEndpoint, mode: str, tmp_path: Path
) -> None:
    pool = SandboxPool(SandboxSettings.from_env(mode).model_copy(update={"timeout": 3.0}))
    try:
        _hostile_state_updates(endpoint, PipelineResources(sandbox=pool), tmp_path)
    finally:
        pool.close()


def _hostile_state_updates(
    endpoint: RunningEndpoint, resources: PipelineResources, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        # Honest control: the file is readable and the victim signalable from here.
        assert secret.read_text() == "s3cret"
        os.kill(victim.pid, 0)
        attacks = {
            "reads": f"lambda a, p: {{'got': open({str(secret)!r}).read()}}",
            "signals": f"lambda a, p: {{'killed': __import__('os').kill({victim.pid}, 9)}}",
            "lists": f"lambda a, p: {{'dir': __import__('os').listdir({str(tmp_path)!r})}}",
            "writes": f"lambda a, p: {{'n': open({str(Path.cwd() / 'planted')!r}, 'w').write('x')}}",
        }
        for name, source in attacks.items():
            outcome = _run(
                endpoint,
                resources,
                {"id": name, "nodes": [_node("n", Q_BAD, "bcl2", state_update_source=source)]},
            )
            assert outcome.final_state["accumulated"] == {}, name
            assert outcome.trace and "state update raised" in outcome.trace[0], name
        assert victim.poll() is None  # still alive
        assert not (Path.cwd() / "planted").exists()
        # And an honest update in the same sandbox does change the state.
        honest = {
            "id": "honest",
            "nodes": [
                _node("n", Q_BAD, "bcl2", state_update_source="lambda a, p: {'v': p['value']}")
            ],
        }
        assert _run(endpoint, resources, honest).final_state["accumulated"] == {"v": "p53"}
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait()
