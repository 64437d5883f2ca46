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
    ScenarioNode,
    ScenarioStatus,
    ScenarioTerminalFailure,
    ScenarioTurnRecord,
    ScenarioUnit,
    VerificationConfig,
    VerificationResult,
    merge_dynamic_rubrics,
    merge_rubrics,
    scenario_key,
)

from .._llm_protocol import Message
from .._resources import PipelineResources
from .._reverify import reverify_unit
from .._run import verify_question
from ._code import (
    USER,
    ScenarioCode,
    ScenarioCodeFailure,
    TaggedMessage,
    apply_handover,
)
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


def next_edge(
    edges: Sequence[ScenarioEdge],
    state: dict[str, Any],
    code: ScenarioCode | None = None,
    history: Sequence[ScenarioTurnRecord] = (),
) -> ScenarioEdge | None:
    """The edge to follow from ``state``: the first conditional edge whose every
    condition holds, else the first unconditional (fallback) edge, else None.
    A code condition (run by ``code``) replaces the edge's declarative ones.

    Raises:
        ScenarioCodeFailure: a code condition crashed or hung its sandbox process.
    """
    fallback: ScenarioEdge | None = None
    for edge in edges:
        if edge.is_fallback:
            fallback = fallback or edge
        elif edge.condition_source is not None:
            if code is None:
                raise ScenarioCodeFailure(edge.source, "condition", "no sandbox to run code in")
            if code.condition(edge, state, history):
                return edge
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


def _record(
    turn: int, node: ScenarioNode, results: list[VerificationResult], entry: _Entry
) -> ScenarioTurnRecord:
    first = results[0]
    template = first.template
    rubric = first.rubric
    return ScenarioTurnRecord(
        turn=turn,
        node_id=node.id,
        question_id=first.metadata.question_id,
        question_text=node.question.text,
        prompt=entry.prompt if entry.prompt != node.question.text else None,
        agent_id=entry.agent_id,
        handover=entry.handover,
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


@dataclass(frozen=True)
class _Entry:
    """How a turn was entered: its agent, the question as sent, the
    conversation handed to it, and the handover that shaped them (if any)."""

    agent_id: str
    prompt: str
    conversation: list[Message]
    handover: str | None


class _Execution:
    """The mutable state of one run (kept out of the public function)."""

    def __init__(
        self, scenario: ScenarioDefinition, code: ScenarioCode, answering: ModelConfig
    ) -> None:
        self.scenario = scenario
        self.code = code
        self.path: list[str] = []
        self.history: list[ScenarioTurnRecord] = []
        self.conversation: list[Message] = []
        # Every message with the agent that produced it (the original's
        # TaggedMessage history), for handovers and provenance.
        self.tagged: list[TaggedMessage] = []
        self.pending: ScenarioEdge | None = None
        entry = scenario.node(scenario.entry_node)
        self.base_agent = entry.agent_identity or answering.id or answering.model_name
        self.previous: tuple[str, str | None] | None = None
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

    def enter(self, node: ScenarioNode, model: ModelConfig) -> _Entry:
        """Prepare a turn at ``node``: apply the handover of the edge that led
        here, and tag the agent's system prompt and the question.

        Raises:
            ScenarioCodeFailure: handover code failed.
        """
        agent = node.agent_identity or self.base_agent
        edge, self.pending = self.pending, None
        handed = apply_handover(
            edge, self.tagged, node.question.text, self.code, self.state, self.history
        )
        prompt, conversation = handed if handed is not None else (node.question.text, None)
        handover = None
        if handed is not None and edge is not None:
            handover = edge.handover or "code"
        if self.previous != (agent, model.system_prompt) and model.system_prompt:
            # As the original: a new agent or prompt shows in later transcripts.
            self.tagged.append(TaggedMessage(agent, "system", model.system_prompt))
        self.previous = (agent, model.system_prompt)
        self.tagged.append(TaggedMessage(USER, "user", prompt))
        if conversation is None:
            conversation = list(self.conversation)
        return _Entry(agent, prompt, conversation, handover)

    def absorb(self, node_id: str, record: ScenarioTurnRecord, entry: _Entry) -> None:
        """Fold one finished turn into the state and the conversation.

        Raises:
            ScenarioCodeFailure: the node's state update code crashed or hung.
        """
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
        node = self.scenario.node(node_id)
        for update in node.state_update:
            update.apply(state["accumulated"], state)
        self.history.append(record)
        self.conversation.append({"role": "user", "content": entry.prompt})
        self.conversation.append({"role": "assistant", "content": record.raw_response})
        self.tagged.append(TaggedMessage(entry.agent_id, "assistant", record.raw_response))
        if node.state_update_source is not None:
            state["accumulated"] = self.code.state_update(
                node_id, node.state_update_source, state["accumulated"], record.parsed_fields
            )


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
    # The agent runtime (langchain) is loaded by the first scenario run, not by
    # every process that imports this module.
    from ._tools import ToolFilterError, filtered_model

    resources = resources or PipelineResources.default()
    run = ScenarioRun()
    code = ScenarioCode(resources.sandbox)
    execution = _Execution(scenario, code, answering)
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
            model = node.answering_model or answering
            if node.tool_filter is not None:
                model = filtered_model(
                    model,
                    node.tool_filter,
                    node.id,
                    timeout=config.request_timeout or 30.0,
                    deadline=deadline,
                )
            entry = execution.enter(node, model)
            # A handover rewrites the question as sent; its id and template stay.
            question = (
                node.question
                if entry.prompt == node.question.text
                else node.question.model_copy(update={"text": entry.prompt})
            )
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
                    question,
                    model,
                    judges,
                    config,
                    stored,
                    source=replay.source,
                    replicate=replicate,
                    rubric=rubric,
                    dynamic_rubric=dynamic_rubric,
                    resources=resources,
                    deadline=deadline,
                    conversation=entry.conversation,
                )
            else:
                results = verify_question(
                    question,
                    model,
                    judges,
                    config,
                    replicate=replicate,
                    rubric=rubric,
                    dynamic_rubric=dynamic_rubric,
                    resources=resources,
                    deadline=deadline,
                    conversation=entry.conversation,
                )
            _link(results, scenario.id, node_id, turn, execution.path)
            run.results.extend(results)
            record = _record(turn, node, results, entry)
            execution.absorb(node_id, record, entry)
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
            edge = next_edge(scenario.outgoing(node_id), execution.state, code, execution.history)
            target = None if edge is None or edge.target == END else edge.target
            execution.pending = edge
            if target is not None and execution.state["turn"] >= scenario.turn_limit:
                status = "limit_reached"
                break
            node_id = target
    except ToolFilterError as exc:  # the node's filter does not fit its agent's servers
        status = "error"
        failure = ScenarioTerminalFailure(
            node_id=execution.state["current_node"], stage="tool_filter", reason=str(exc)
        )
    except ScenarioCodeFailure as exc:  # the scenario's code crashed or hung its sandbox
        status = "error"
        failure = ScenarioTerminalFailure(
            node_id=exc.node_id or execution.state["current_node"],
            stage=exc.stage,
            reason=exc.reason,
        )
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
        unit_key=scenario_key(scenario, answering.identity(), replicate),
    )
    outcome.outcome_results = evaluate_outcomes(list(scenario.outcome_criteria), outcome, code)
    outcome.trace = code.trace
    run.scenario_result = outcome
    return run
