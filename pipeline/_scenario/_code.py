"""A scenario's code and handovers during a run.

Scenario code (state updates, edge conditions, outcome code, handover code) runs
in the sandbox (:mod:`verifleet.sandbox._scenario_code`) with the original
framework's semantics:

- a state update's result replaces ``state.accumulated``; one that raises (or
  returns no dict) leaves it as it was;
- a condition that raises is an unmatched edge;
- outcome code's value is recorded like a declarative check's; one that raises
  records False.

Each of those is noted in the run's ``trace``. Code that crashes or hangs its
sandbox process (or a sandbox that fails) is not the author's ordinary error: it
fails the run, naming the node or edge (:class:`ScenarioCodeFailure`).

Handovers decide what the next node is told of the conversation so far: the
original's transcript strategies put a labelled transcript of every message
(``[agent:role:text]``, ``[__user__]`` for the scenario's own prompts) before or
after the next question, separated by :data:`TRANSCRIPT_SEPARATOR`, and send no
other history; handover code returns the conversation to send instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verifleet.sandbox import SandboxPool
from verifleet.sandbox._scenario_code import (
    ScenarioCodeError,
    ScenarioCodeRole,
    call_scenario_code,
)
from verifleet.schemas import ScenarioEdge, ScenarioTurnRecord, VerifleetError

from .._llm_protocol import Message

__all__ = [
    "TRANSCRIPT_SEPARATOR",
    "USER",
    "ScenarioCode",
    "ScenarioCodeFailure",
    "TaggedMessage",
    "apply_handover",
    "format_transcript",
]

#: Between a transcript and the question, as the original writes it.
TRANSCRIPT_SEPARATOR = "\n\n---\n\n"

#: The agent id of the scenario's own prompts (reserved, as in the original).
USER = "__user__"


@dataclass(frozen=True)
class TaggedMessage:
    """One message of the run with the agent that produced it (:data:`USER`
    for the scenario's questions)."""

    agent_id: str
    role: str
    content: str

    def as_dict(self) -> dict[str, str]:
        """JSON form (what handover code receives and turn records keep)."""
        return {"agent_id": self.agent_id, "role": self.role, "content": self.content}


def format_transcript(messages: Sequence[TaggedMessage]) -> str:
    """The labelled transcript of ``messages``, one line per message:
    ``[__user__] text`` for the scenario's prompts, ``[agent:role:text] text``
    for the rest; empty for no messages."""
    lines = []
    for message in messages:
        label = (
            f"[{USER}]" if message.agent_id == USER else f"[{message.agent_id}:{message.role}:text]"
        )
        lines.append(f"{label} {message.content}")
    return "\n".join(lines)


class ScenarioCodeFailure(VerifleetError):
    """Scenario code crashed or hung its sandbox process: the run fails at
    ``node_id`` with ``stage`` (``state_update``, ``condition``, ``handover``)."""

    def __init__(self, node_id: str | None, stage: str, reason: str) -> None:
        super().__init__(reason)
        self.node_id = node_id
        self.stage = stage
        self.reason = reason


def _history(history: Sequence[ScenarioTurnRecord]) -> list[dict[str, Any]]:
    return [t.model_dump(mode="json") for t in history]


class ScenarioCode:
    """Runs one run's scenario code in ``pool`` and keeps its ``trace`` (what
    the code did that the results do not show: raised conditions and updates)."""

    def __init__(self, pool: SandboxPool) -> None:
        self._pool = pool
        self.trace: list[str] = []

    def _call(
        self, role: ScenarioCodeRole, source: str, args: Mapping[str, Any], where: str
    ) -> tuple[Any, str | None]:
        """(value, None), or (None, why) when the code raised.

        Raises:
            ScenarioCodeFailure: it crashed or hung its process.
        """
        try:
            return call_scenario_code(self._pool, role, source, args), None
        except ScenarioCodeError as exc:
            if exc.raised:
                return None, str(exc)
            raise ScenarioCodeFailure(None, role, f"{where}: {exc}") from None

    def state_update(
        self, node_id: str, source: str, accumulated: dict[str, Any], parsed: dict[str, Any]
    ) -> dict[str, Any]:
        """The new accumulated state (the old one when the code raised).

        Raises:
            ScenarioCodeFailure: it crashed or hung (naming the node).
        """
        where = f"node {node_id!r}: state update"
        try:
            value, error = self._call(
                "state_update", source, {"accumulated": accumulated, "parsed": parsed}, where
            )
        except ScenarioCodeFailure as exc:
            raise ScenarioCodeFailure(node_id, "state_update", exc.reason) from None
        if error is not None:
            self.trace.append(f"{where} raised, accumulated state kept: {error}")
            return accumulated
        return dict(value)

    def condition(
        self, edge: ScenarioEdge, state: Mapping[str, Any], history: Sequence[ScenarioTurnRecord]
    ) -> bool:
        """Whether the edge's code condition holds (False when it raised).

        Raises:
            ScenarioCodeFailure: it crashed or hung (naming the edge).
        """
        assert edge.condition_source is not None
        where = f"edge {edge.label}: condition"
        try:
            value, error = self._call(
                "condition",
                edge.condition_source,
                {"state": dict(state), "history": _history(history)},
                where,
            )
        except ScenarioCodeFailure as exc:
            raise ScenarioCodeFailure(edge.source, "condition", exc.reason) from None
        if error is not None:
            self.trace.append(f"{where} raised, edge not taken: {error}")
            return False
        return bool(value)

    def evaluate(self, name: str, source: str, run: Mapping[str, Any]) -> bool | int | float:
        """Outcome code's value over the finished run; False (noted in the
        trace) when it raised, crashed or hung: one criterion never hides the
        others, as in the original."""
        where = f"outcome criterion {name!r}"
        try:
            value, error = self._call("evaluate", source, {"result": dict(run)}, where)
        except ScenarioCodeFailure as exc:
            self.trace.append(f"{exc.reason}; recorded False")
            return False
        if error is not None:
            self.trace.append(f"{where} raised, recorded False: {error}")
            return False
        return value

    def handover(
        self,
        edge: ScenarioEdge,
        messages: Sequence[TaggedMessage],
        state: Mapping[str, Any],
        history: Sequence[ScenarioTurnRecord],
    ) -> list[Message]:
        """The conversation handover code gives the edge's target.

        Raises:
            ScenarioCodeFailure: it raised, crashed or hung (naming the edge): a
                raising handover fails the run in the original too.
        """
        assert edge.handover_source is not None
        where = f"edge {edge.label}: handover"
        args = {
            "messages": [m.as_dict() for m in messages],
            "state": dict(state),
            "history": _history(history),
        }
        try:
            value, error = self._call("handover", edge.handover_source, args, where)
        except ScenarioCodeFailure as exc:
            raise ScenarioCodeFailure(edge.source, "handover", exc.reason) from None
        if error is not None:
            raise ScenarioCodeFailure(edge.source, "handover", f"{where} raised: {error}")
        return [{"role": m["role"], "content": m["content"]} for m in value]


def apply_handover(
    edge: ScenarioEdge | None,
    messages: Sequence[TaggedMessage],
    question: str,
    code: ScenarioCode,
    state: Mapping[str, Any],
    history: Sequence[ScenarioTurnRecord],
) -> tuple[str, list[Message]] | None:
    """The question text and conversation the edge's handover gives its target,
    or None when the edge has none (the whole conversation goes on).

    Raises:
        ScenarioCodeFailure: handover code failed.
    """
    if edge is None or (edge.handover is None and edge.handover_source is None):
        return None
    if edge.handover_source is not None:
        return question, code.handover(edge, messages, state, history)
    transcript = format_transcript(messages)
    if edge.handover == "transcript_prepend":
        return transcript + TRANSCRIPT_SEPARATOR + question, []
    return question + TRANSCRIPT_SEPARATOR + transcript, []
