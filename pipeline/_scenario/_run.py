"""Running one scenario × answering model × replicate, turn by turn.

Each turn is one ordinary :func:`~verifleet.pipeline.verify_question` call (all 13
stages) for the node's question, with the conversation so far handed to the
answering model. Routing, state and outcome criteria read the first parsing
model's result of each turn; every parsing model's result is kept.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from verifleet.schemas import (
    END,
    DynamicRubric,
    JobSpec,
    ModelConfig,
    Rubric,
    ScenarioDefinition,
    ScenarioEdge,
    ScenarioExecutionResult,
    ScenarioStatus,
    ScenarioTerminalFailure,
    ScenarioTurnRecord,
    ScenarioUnit,
    VerificationConfig,
    VerificationResult,
    merge_dynamic_rubrics,
    merge_rubrics,
)

from .._llm_protocol import Message
from .._resources import PipelineResources
from .._reverify import reverify_unit
from .._run import verify_question
from ._outcomes import evaluate_outcomes

__all__ = ["ScenarioReplay", "ScenarioRun", "next_edge", "run_scenario", "run_scenario_unit"]

_log = logging.getLogger(__name__)


@dataclass
class ScenarioRun:
    """Everything one scenario unit produced: every turn's results (each parsing
    model's, in turn order) and the run's :class:`ScenarioExecutionResult`."""

    results: list[VerificationResult] = field(default_factory=list)
    scenario_result: ScenarioExecutionResult | None = None


@dataclass(frozen=True)
class ScenarioReplay:
    """A stored run of the scenario to judge again (``verifleet reverify``).

    Attributes:
        turns: The stored run's results, one list per turn in turn order (each
            parsing model's result of that turn).
        source: Names the stored run in each new result's ``derived_from``.
    """

    turns: Sequence[Sequence[VerificationResult]]
    source: str


def _diverged(turn: int, node_id: str, stored_node: str | None) -> ScenarioTerminalFailure:
    went = f"node {stored_node!r}" if stored_node is not None else "its end"
    return ScenarioTerminalFailure(
        node_id=node_id,
        stage="reverify",
        reason=(
            f"judged again, turn {turn} goes to node {node_id!r} where the stored run "
            f"went to {went}: there is no stored answer to judge (run the scenario again)"
        ),
    )


def next_edge(edges: Sequence[ScenarioEdge], state: dict[str, Any]) -> ScenarioEdge | None:
    """The edge to follow from ``state``: the first conditional edge whose every
    condition holds, else the first unconditional (fallback) edge, else None."""
    fallback: ScenarioEdge | None = None
    for edge in edges:
        if edge.is_fallback:
            fallback = fallback or edge
        elif all(condition.check(state) for condition in edge.when):
            return edge
    return fallback


def _link(
    results: list[VerificationResult], scenario_id: str, node_id: str, turn: int, path: list[str]
) -> None:
    for result in results:
        meta = result.metadata
        meta.scenario_id = scenario_id
        meta.scenario_node = node_id
        meta.scenario_turn = turn
        meta.scenario_path = list(path)


def _record(turn: int, node_id: str, results: list[VerificationResult]) -> ScenarioTurnRecord:
    first = results[0]
    template = first.template
    rubric = first.rubric
    return ScenarioTurnRecord(
        turn=turn,
        node_id=node_id,
        question_id=first.metadata.question_id,
        question_text=first.metadata.question_text,
        raw_response=template.raw_llm_response if template is not None else "",
        parsed_fields=dict(template.parsed_llm_response or {}) if template is not None else {},
        verify_result=template.verify_result if template is not None else None,
        rubric_scores=(
            rubric.get_all_trait_scores()
            if rubric is not None and rubric.rubric_evaluation_performed
            else {}
        ),
        result_ids=[r.metadata.result_id for r in results],
        error=first.metadata.error,
    )


class _Execution:
    """The mutable state of one run (kept out of the public function)."""

    def __init__(self, scenario: ScenarioDefinition) -> None:
        self.scenario = scenario
        self.path: list[str] = []
        self.history: list[ScenarioTurnRecord] = []
        self.conversation: list[Message] = []
        self.state: dict[str, Any] = {
            "turn": 0,
            "current_node": scenario.entry_node,
            "verify_result": None,
            "parsed": {},
            "rubric": {},
            "node_visits": {node.id: 0 for node in scenario.nodes},
            "node_results": {},
            "accumulated": {},
        }

    def absorb(self, node_id: str, record: ScenarioTurnRecord) -> None:
        """Fold one finished turn into the state and the conversation."""
        state = self.state
        state["turn"] += 1
        state["verify_result"] = record.verify_result
        state["parsed"] = record.parsed_fields
        state["rubric"] = record.rubric_scores
        state["node_visits"][node_id] = state["node_visits"].get(node_id, 0) + 1
        state["node_results"][node_id] = {
            "verify_result": record.verify_result,
            "parsed": record.parsed_fields,
            "rubric": record.rubric_scores,
        }
        for update in self.scenario.node(node_id).state_update:
            update.apply(state["accumulated"], state)
        self.history.append(record)
        self.conversation.append({"role": "user", "content": record.question_text})
        self.conversation.append({"role": "assistant", "content": record.raw_response})


def run_scenario_unit(
    unit: ScenarioUnit,
    spec: JobSpec,
    resources: PipelineResources | None = None,
    *,
    deadline: float | None = None,
    replay: ScenarioReplay | None = None,
) -> ScenarioRun:
    """Run one scenario unit of a job: what the local runner, its re-verification
    and the Celery task all call (as :func:`~verifleet.pipeline.run_unit` is for
    question units), with the job's judges and global rubrics.

    Returns:
        As :func:`run_scenario`; never raises for a scenario's own failures.
    """
    return run_scenario(
        unit.scenario,
        unit.answering,
        spec.config.parsing_models,
        spec.config,
        replicate=unit.replicate,
        global_rubric=spec.benchmark.global_rubric,
        global_dynamic_rubric=spec.benchmark.global_dynamic_rubric,
        resources=resources,
        deadline=deadline,
        replay=replay,
    )


def run_scenario(
    scenario: ScenarioDefinition,
    answering: ModelConfig,
    parsing_models: Sequence[ModelConfig],
    config: VerificationConfig,
    *,
    replicate: int | None,
    global_rubric: Rubric | None = None,
    global_dynamic_rubric: DynamicRubric | None = None,
    resources: PipelineResources | None = None,
    deadline: float | None = None,
    replay: ScenarioReplay | None = None,
) -> ScenarioRun:
    """Run ``scenario`` for one answering model and replicate.

    Each node's ``answering_model`` / ``parsing_model`` override the run's models
    for that turn. Every result carries ``metadata.scenario_id``,
    ``scenario_node``, ``scenario_turn`` (from 0) and ``scenario_path`` (the nodes
    visited up to and including that turn).

    With ``replay`` no answering model is called: each turn judges the stored
    run's answer of that turn again (as :func:`~verifleet.pipeline.reverify_unit`
    does) and routes on the new verdicts. When they lead to a node the stored run
    did not visit at that turn, there is no answer to judge: the run stops with
    status ``error`` at stage ``reverify``, naming both nodes.

    Returns:
        The turn results and the :class:`ScenarioExecutionResult`: status
        ``completed`` (an END edge or no edge matched), ``limit_reached`` (the
        turn limit stopped a run that had somewhere to go), ``timeout``
        (``deadline`` passed) or ``error`` (a turn's result has an error, or
        something raised outside the pipeline; ``terminal_failure`` says where).
        Never raises for a scenario's own failures: they are in the result.
    """
    resources = resources or PipelineResources.default()
    run = ScenarioRun()
    execution = _Execution(scenario)
    status: ScenarioStatus = "completed"
    failure: ScenarioTerminalFailure | None = None
    node_id: str | None = scenario.entry_node
    try:
        while node_id is not None:
            if deadline is not None and time.monotonic() >= deadline:
                status = "timeout"
                failure = ScenarioTerminalFailure(
                    node_id=node_id, stage="deadline", reason="the unit deadline passed"
                )
                break
            node = scenario.node(node_id)
            turn = execution.state["turn"]
            stored: Sequence[VerificationResult] = ()
            if replay is not None:
                stored = replay.turns[turn] if turn < len(replay.turns) else ()
                stored_node = stored[0].metadata.scenario_node if stored else None
                if stored_node != node_id:
                    status, failure = "error", _diverged(turn, node_id, stored_node)
                    break
            execution.path.append(node_id)
            execution.state["current_node"] = node_id
            judges = [node.parsing_model] if node.parsing_model else list(parsing_models)
            rubric = merge_rubrics(
                global_rubric, node.question.question_rubric, question_id=node.question.id
            )
            # The benchmark's global dynamic rubric applies to every turn too.
            dynamic_rubric = merge_dynamic_rubrics(
                global_dynamic_rubric,
                node.question.question_dynamic_rubric,
                question_id=node.question.id,
            )
            if replay is not None:
                results = reverify_unit(
                    node.question,
                    node.answering_model or answering,
                    judges,
                    config,
                    stored,
                    source=replay.source,
                    replicate=replicate,
                    rubric=rubric,
                    dynamic_rubric=dynamic_rubric,
                    resources=resources,
                    deadline=deadline,
                    conversation=execution.conversation,
                )
            else:
                results = verify_question(
                    node.question,
                    node.answering_model or answering,
                    judges,
                    config,
                    replicate=replicate,
                    rubric=rubric,
                    dynamic_rubric=dynamic_rubric,
                    resources=resources,
                    deadline=deadline,
                    conversation=execution.conversation,
                )
            _link(results, scenario.id, node_id, turn, execution.path)
            run.results.extend(results)
            record = _record(turn, node_id, results)
            execution.absorb(node_id, record)
            if record.error is not None:
                status = "error"
                failure = ScenarioTerminalFailure(
                    node_id=node_id, stage="turn", reason=record.error
                )
                break
            cap = config.scenario_turn_limit
            if cap is not None and execution.state["turn"] >= cap:
                # The original checks its configured limit before routing, so a
                # run that reaches it stops even when its next step would be END.
                status = "limit_reached"
                break
            edge = next_edge(scenario.outgoing(node_id), execution.state)
            target = None if edge is None or edge.target == END else edge.target
            if target is not None and execution.state["turn"] >= scenario.turn_limit:
                status = "limit_reached"
                break
            node_id = target
    except Exception as exc:  # a bug or an infrastructure fault: this scenario fails, not the job
        _log.exception("scenario %s failed outside the pipeline", scenario.id)
        status = "error"
        failure = ScenarioTerminalFailure(
            node_id=execution.state["current_node"],
            stage="execution",
            reason=f"{type(exc).__name__}: {exc}",
        )
    outcome = ScenarioExecutionResult(
        scenario_id=scenario.id,
        status=status,
        path=execution.path,
        turn_count=execution.state["turn"],
        history=execution.history,
        final_state=execution.state,
        terminal_failure=failure,
        answering_model=answering.identity().display_string,
        replicate=replicate,
        run_name=config.run_name,
    )
    outcome.outcome_results = evaluate_outcomes(list(scenario.outcome_criteria), outcome)
    run.scenario_result = outcome
    return run
