"""Scenario units in the fleet protocol: counted with the questions, sent to their
own task, skipped once done, and keyed so a rerun writes the same keys."""

from __future__ import annotations

from _support.scenarios import scenario_benchmark, scenario_config

from verifleet.schemas import ModelIdentity, VerificationResult, VerificationResultMetadata
from verifleet.store import (
    SCENARIO_TASK_NAME,
    TASK_NAME,
    ScenarioUnit,
    count_units,
    expand_scenario_units,
    result_key,
    scenario_result_keys,
    unit_messages,
)


def test_scenario_units_are_sent_to_their_task_and_skipped_when_done() -> None:
    benchmark = scenario_benchmark()
    config = scenario_config("http://127.0.0.1:1/v1", replicate_count=2)
    assert count_units(benchmark, config) == (1 + 5) * 2
    refs = [ref for ref, _labels in unit_messages("job", benchmark, config)]
    assert [r.task_name for r in refs].count(TASK_NAME) == 2
    scenario_refs = [r for r in refs if r.task_name == SCENARIO_TASK_NAME]
    assert len(scenario_refs) == 10 and all(r.kind == "scenario" for r in scenario_refs)
    assert scenario_refs[0].task_args() == ["job", 0, 0, 1]
    units = list(expand_scenario_units(benchmark, config))
    done = {u.key("job") for u in units[:3]}
    left = [ref for ref, _ in unit_messages("job", benchmark, config, skip=done)]
    assert len(left) == 12 - 3


def test_a_scenario_units_key_changes_with_the_scenario_not_with_time() -> None:
    benchmark = scenario_benchmark()
    config = scenario_config("http://127.0.0.1:1/v1")
    unit = next(expand_scenario_units(benchmark, config))
    assert unit.key("j") == unit.key("j")
    changed = unit.scenario.model_copy(update={"max_turns": 9})
    other = ScenarioUnit(changed, unit.answering, unit.replicate)
    assert other.key("j") != unit.key("j")


def _turn(turn: int, node: str, timestamp: str) -> VerificationResult:
    identity = ModelIdentity(interface="openai_endpoint", model_name="m")
    return VerificationResult(
        metadata=VerificationResultMetadata(
            question_id="q",
            template_id="t",
            question_text="?",
            answering=identity,
            parsing=identity,
            replicate=1,
            completed_without_errors=True,
            execution_time=0.1,
            timestamp=timestamp,
            scenario_id="s",
            scenario_node=node,
            scenario_turn=turn,
            scenario_path=[node],
        )
    )


def test_turn_keys_name_scenario_turn_and_node() -> None:
    first = [_turn(0, "a", "t1"), _turn(1, "a", "t1")]
    rerun = [_turn(0, "a", "t2"), _turn(1, "a", "t2")]
    keys = scenario_result_keys(first, job_id="j")
    assert len(set(keys)) == 2  # the same node visited twice: two keys
    assert scenario_result_keys(rerun, job_id="j") == keys  # a rerun: the same keys
    assert [result_key(r, job_id="j") for r in first] == keys
