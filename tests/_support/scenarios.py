"""Scenario benchmarks whose every answer is scripted on bench/endpoint.py.

The endpoint answers by the longest question text found in a prompt. A scenario
turn's answering prompt holds the earlier turns' questions too, so along every
path a later node's question is longer than the earlier ones: the endpoint then
answers the question being asked. Judge prompts hold only the current question.
"""

from __future__ import annotations

import textwrap
from typing import Any

from verifleet.schemas import Benchmark, ModelConfig, Question, RetryPolicy, VerificationConfig

__all__ = [
    "ANSWERS",
    "DANGLING_PROBLEM",
    "DEAD_URL",
    "dangling_scenario",
    "scenario_benchmark",
    "scenario_config",
    "spinning_scenario",
    "template",
]

#: Nothing listens here: a node whose model points at it fails its turn.
DEAD_URL = "http://127.0.0.1:9/v1"


def template(expected: str) -> str:
    """An answer template whose ``value`` must equal ``expected``."""
    return textwrap.dedent(
        f"""
        from pydantic import Field

        class Answer(BaseAnswer):
            value: str = Field(description="The value the answer gives")

            def model_post_init(self, __context):
                self.correct = {{"value": {expected!r}}}

            def verify(self) -> bool:
                return self.value.strip().lower() == self.correct["value"]
        """
    )


Q_GOOD = "Start: which gene?"
Q_BAD = "Start: which protein?"
Q_PRAISE = "Praise branch: correct, now which organ is affected?"
Q_RETRY = "Retry branch: not quite, which gene did you mean instead?"
Q_LOOP = "Loop: say the gene again."
Q_COUNT = "Counting: name one gene for the tally."
Q_BROKEN = "Broken branch: this turn's model is unreachable, answer anyway."

ANSWERS: dict[str, Any] = {
    Q_GOOD: {"text": "The gene is BCL2.", "fields": {"value": "bcl2"}},
    Q_BAD: {"text": "The protein is p53.", "fields": {"value": "p53"}},
    Q_PRAISE: {"text": "The pancreas.", "fields": {"value": "pancreas"}},
    Q_RETRY: {"text": "I meant KRAS.", "fields": {"value": "kras"}},
    Q_LOOP: {"text": "BCL2 again.", "fields": {"value": "bcl2"}},
    Q_COUNT: {"text": "TP53.", "fields": {"value": "tp53"}},
    Q_BROKEN: {"text": "unused", "fields": {"value": "unused"}},
}


def _node(node_id: str, text: str, expected: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "question": {"text": text, "answer_template": template(expected)},
        **extra,
    }


def _branching(scenario_id: str, start: str) -> dict[str, Any]:
    """start → praise when the start turn verified, else (fallback) → retry."""
    return {
        "id": scenario_id,
        "entry_node": "start",
        "nodes": [
            _node("start", start, "bcl2"),
            _node("praise", Q_PRAISE, "pancreas"),
            _node("retry", Q_RETRY, "kras"),
        ],
        "edges": [
            {
                "source": "start",
                "target": "praise",
                "when": {"field": "verify_result", "equals": True},
            },
            {"source": "start", "target": "retry"},
            {"source": "praise", "target": "END"},
            {"source": "retry", "target": "END"},
        ],
        "outcome_criteria": [
            {
                "name": "praised",
                "check": {
                    "type": "turn_check",
                    "scope": {"type": "any_turn"},
                    "field": "node_id",
                    "equals": "praise",
                },
            },
            {
                "name": "all_correct",
                "check": {"scope": {"type": "all_turns"}, "field": "verify_result", "equals": True},
            },
            {"name": "turns", "check": {"type": "count_turns"}},
        ],
    }


def _loop() -> dict[str, Any]:
    """A node that routes to itself for ever: the turn limit ends it."""
    return {
        "id": "loop",
        "max_turns": 3,
        "nodes": [_node("again", Q_LOOP, "bcl2")],
        "edges": [{"source": "again", "target": "again"}],
        "outcome_criteria": [
            {
                "name": "hit_limit",
                "check": {"type": "result_check", "field": "status", "equals": "limit_reached"},
            }
        ],
    }


def _tally() -> dict[str, Any]:
    """Counts turns in state.accumulated and leaves once the count reaches 2."""
    return {
        "id": "tally",
        "max_turns": 10,
        "nodes": [
            _node(
                "count",
                Q_COUNT,
                "tp53",
                state_update=[
                    {"key": "count", "op": "increment"},
                    {"key": "genes", "op": "append", "from": "parsed.value"},
                ],
            )
        ],
        "edges": [
            {
                "source": "count",
                "target": "END",
                "when": {"field": "accumulated.count", "op": "ge", "expected": 2},
            },
            {"source": "count", "target": "count"},
        ],
        "outcome_criteria": [
            {
                "name": "two_counted",
                "check": {"type": "result_check", "field": "state.accumulated.count", "equals": 2},
            }
        ],
    }


def _broken() -> dict[str, Any]:
    """Its second turn's answering model is unreachable: the run ends in error."""
    return {
        "id": "broken",
        "nodes": [
            _node("start", Q_GOOD, "bcl2"),
            _node(
                "dead",
                Q_BROKEN,
                "unused",
                answering_model={
                    "model_name": "nobody",
                    "interface": "openai_endpoint",
                    "endpoint_base_url": DEAD_URL,
                },
            ),
        ],
        "edges": [{"source": "start", "target": "dead"}],
    }


def scenario_benchmark(*, broken: bool = True, questions: bool = True) -> Benchmark:
    """Four working scenarios (branch taken, fallback taken, turn limit, state
    tally), optionally a broken one and an ordinary question."""
    scenarios = [
        _branching("branch_pass", Q_GOOD),
        _branching("branch_fail", Q_BAD),
        _loop(),
        _tally(),
    ]
    if broken:
        scenarios.append(_broken())
    plain = (
        [Question(id="plain", text=Q_GOOD, answer_template=template("bcl2"))] if questions else []
    )
    return Benchmark.model_validate(
        {"name": "scenario-demo", "questions": plain, "scenarios": scenarios}
    )


def scenario_config(base_url: str, **extra: Any) -> VerificationConfig:
    """One answering and one parsing model on the scripted endpoint; failures are
    not retried (a dead endpoint fails at once)."""
    answering = ModelConfig(
        model_name="answerer", interface="openai_endpoint", endpoint_base_url=base_url
    )
    parsing = ModelConfig(
        model_name="judge", interface="openai_endpoint", endpoint_base_url=base_url
    )
    return VerificationConfig(
        answering_models=[answering],
        parsing_models=[parsing],
        retry_policy=RetryPolicy(max_attempts=1, jitter=0.0),
        request_timeout=10.0,
        **extra,
    )


DANGLING_PROBLEM = (
    "scenario 'dangling-edge': edge start -> ghost: target 'ghost' is not a node or END"
)


def dangling_scenario() -> dict[str, Any]:
    """A scenario (as a file holds it) whose edge points at an unknown node: it
    fails validation, so it fails alone (``DANGLING_PROBLEM``)."""
    return {
        "id": "dangling-edge",
        "nodes": [_node("start", Q_GOOD, "bcl2")],
        "edges": [{"source": "start", "target": "ghost"}],
    }


def spinning_scenario(max_turns: int = 20) -> dict[str, Any]:
    """A node that routes to itself, bounded only by ``max_turns`` (20: what a
    checkpoint's scenario gets, the original's default limit)."""
    return {
        "id": "spin",
        "max_turns": max_turns,
        "nodes": [_node("again", Q_LOOP, "bcl2")],
        "edges": [{"source": "again", "target": "again"}],
    }
