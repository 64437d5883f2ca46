"""The scenario graph: nodes (one question and template per turn), edges with
conditions, declarative state updates, outcome criteria and a turn limit.

A run starts at ``entry_node``. After each turn the node's ``state_update`` runs,
then the node's outgoing edges are tried in order: the first edge whose every
condition holds is taken; an edge without conditions is the fallback, taken only
when no conditional edge matches. No edge matching, or the target ``END``, ends
the run. See ``docs/scenarios.md`` for the state the conditions read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .._benchmark._question import Question
from .._config import ModelConfig
from ._conditions import Condition, resolve_path
from ._graph import graph_problems
from ._outcomes import OutcomeCriterion, code_problem

__all__ = [
    "END",
    "HANDOVERS",
    "ScenarioDefinition",
    "ScenarioEdge",
    "ScenarioNode",
    "StateUpdate",
    "ToolFilter",
    "code_problem",
]

#: The original framework's handover strategies (what the next node is told of
#: the conversation so far when an edge is crossed).
HANDOVERS = ("transcript_prepend", "transcript_append", "transcript_materialize")

Handover = Literal["transcript_prepend", "transcript_append", "transcript_materialize"]


class ToolFilterEntry(BaseModel):
    """One MCP tool (or every tool of ``server`` when ``tool`` is None) to hide."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    server: str = Field(min_length=1)
    tool: str | None = None


class ToolFilter(BaseModel):
    """The MCP tools a node's agent does not get: each ``remove`` entry names a
    server of the answering model's ``mcp_urls_dict`` and one of its tools, or
    the whole server."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    remove: list[ToolFilterEntry] = Field(min_length=1)


END = "__end__"
"""The target of an edge that ends the run (``END`` is accepted too)."""


class StateUpdate(BaseModel):
    """One change to ``state.accumulated`` after a node's turn.

    ``op``: ``set`` stores ``value`` (or the value at ``source``, a state path such
    as ``parsed.answer``); ``increment`` adds ``value`` (default 1) to a number;
    ``append`` appends ``value`` / the value at ``source`` to a list. In YAML,
    ``from:`` is accepted for ``source``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    key: str = Field(min_length=1)
    op: Literal["set", "increment", "append"] = "set"
    value: object = None
    source: str | None = Field(default=None, alias="from")

    def apply(self, accumulated: dict[str, object], state: Mapping[str, object]) -> None:
        """Apply the update to ``accumulated`` in place, reading ``source`` from
        ``state``. A value of the wrong type is replaced rather than raising (an
        ``increment`` of a non-number starts from 0, an ``append`` to a non-list
        starts a new list)."""
        new = resolve_path(state, self.source) if self.source else self.value
        if self.op == "set":
            accumulated[self.key] = new
        elif self.op == "increment":
            current = accumulated.get(self.key)
            step = 1 if new is None else new
            base = current if isinstance(current, int | float) else 0
            accumulated[self.key] = base + (step if isinstance(step, int | float) else 0)
        else:
            current = accumulated.get(self.key)
            accumulated[self.key] = [*(current if isinstance(current, list) else []), new]


class ScenarioNode(BaseModel):
    """One turn's question: its text, answer template and rubric (a
    :class:`Question`), optional answering/parsing model overrides, and the state
    updates to run after it.

    ``state_update_source`` is the original framework's state update as code
    (``lambda accumulated, parsed_fields: {...}``), run in the sandbox after the
    declarative ``state_update``; its result replaces ``state.accumulated``.
    ``agent_identity`` names the agent answering this node (turn records and
    handover transcripts carry it). ``tool_filter`` removes MCP tools from the
    node's answering agent for its turn (the original documents it, saves it,
    and never applies it).

    Besides ``question: {text, answer_template, ...}`` the flat form
    ``question: <text>`` with ``answer_template`` / ``raw_answer`` beside it is read.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    question: Question
    answering_model: ModelConfig | None = None
    parsing_model: ModelConfig | None = None
    state_update: list[StateUpdate] = Field(default_factory=list)
    state_update_source: str | None = None
    agent_identity: str | None = None
    tool_filter: ToolFilter | None = None
    metadata: dict[str, object] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _checks(self) -> ScenarioNode:
        if self.state_update_source is not None:
            problem = code_problem(self.state_update_source)
            if problem is not None:
                raise ValueError(f"node {self.id!r}: stateUpdateSource: {problem}")
        if self.agent_identity == "__user__":
            raise ValueError(
                f"node {self.id!r}: agent_identity '__user__' is reserved for the scenario's prompts"
            )
        return self

    @model_validator(mode="before")
    @classmethod
    def _flat_question(cls, data: object) -> object:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        if "node_id" in data and "id" not in data:
            data["id"] = data.pop("node_id")
        question = data.get("question")
        flat = {k: data.pop(k) for k in ("answer_template", "raw_answer") if k in data}
        if isinstance(question, str):
            data["question"] = {"text": question, **flat}
        elif isinstance(question, Mapping) and flat:
            data["question"] = {**question, **flat}
        return data

    @field_validator("state_update", mode="before")
    @classmethod
    def _one_update(cls, value: object) -> object:
        return [value] if isinstance(value, Mapping) else value


class ScenarioEdge(BaseModel):
    """A transition ``source`` → ``target`` (a node id or ``END``), taken when
    every condition in ``when`` holds; an empty ``when`` makes it the fallback.
    ``condition`` (one condition or a list) is the original framework's name.

    ``condition_source`` is a condition as code (``lambda state: ...``, run in
    the sandbox; it replaces ``when``, as in the original). ``handover`` rewrites
    what the target node sees (the original's transcript strategies);
    ``handover_source`` does it with code (``lambda messages, state: [...]``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    target: str
    when: list[Condition] = Field(default_factory=list)
    condition_source: str | None = None
    handover: Handover | None = None
    handover_source: str | None = None

    @model_validator(mode="after")
    def _code(self) -> ScenarioEdge:
        for name, source in (
            ("conditionSource", self.condition_source),
            ("handoverSource", self.handover_source),
        ):
            problem = None if source is None else code_problem(source)
            if problem is not None:
                raise ValueError(f"edge {self.label}: {name}: {problem}")
        if self.handover == "transcript_materialize":
            # The original writes the transcript to a host file and tells the
            # answering agent to read it with its file tool: verifleet's models
            # get no host files (and a file per run would be state outside the
            # unit's exactly-once write), so the strategy is refused.
            raise ValueError(
                f"edge {self.label}: handover 'transcript_materialize' is not supported "
                "(it hands the answering agent a host file to read; use transcript_prepend "
                "or transcript_append, which put the same transcript in the question)"
            )
        if self.handover is not None and self.handover_source is not None:
            raise ValueError(f"edge {self.label}: a handover strategy or handover code, not both")
        return self

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: object) -> object:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        if "condition" in data and "when" not in data:
            data["when"] = data.pop("condition")
        when = data.get("when")
        if when is None:
            data.pop("when", None)
        elif isinstance(when, Mapping):
            data["when"] = [when]
        if isinstance(data.get("when"), list):
            data["when"] = [Condition.coerce(c) for c in data["when"]]
        if data.get("target") == "END":
            data["target"] = END
        return data

    @property
    def is_fallback(self) -> bool:
        """True for an edge without conditions (declarative or code)."""
        return not self.when and self.condition_source is None

    @property
    def label(self) -> str:
        """How errors name the edge: ``source -> target``."""
        return f"{self.source} -> {'END' if self.target == END else self.target}"


class ScenarioDefinition(BaseModel):
    """A validated scenario graph.

    ``max_turns`` bounds a run (the run stops with status ``limit_reached``); a
    graph with a cycle must set it, an acyclic one ends by itself.

    Raises:
        pydantic.ValidationError: wrong field types, or graph problems: an unknown
            entry node, an edge naming an unknown node, a node the entry cannot
            reach, a cycle without ``max_turns``, duplicate node ids. Each problem
            names the scenario and the node or edge at fault.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    description: str = ""
    entry_node: str
    nodes: list[ScenarioNode] = Field(min_length=1)
    edges: list[ScenarioEdge] = Field(default_factory=list)
    outcome_criteria: list[OutcomeCriterion] = Field(default_factory=list)
    max_turns: int | None = Field(default=None, ge=1)
    metadata: dict[str, object] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: object) -> object:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        if "name" in data and "id" not in data:
            data["id"] = data.pop("name")
        nodes = data.get("nodes")
        if isinstance(nodes, Mapping):
            # {node id: node} as the original framework keeps them.
            data["nodes"] = [
                {"id": key, **value} if isinstance(value, Mapping) else value
                for key, value in nodes.items()
            ]
        if "entry_node" not in data and isinstance(data.get("nodes"), list) and data["nodes"]:
            first = data["nodes"][0]
            if isinstance(first, Mapping) and isinstance(first.get("id"), str):
                data["entry_node"] = first["id"]
        return data

    @model_validator(mode="after")
    def _graph(self) -> ScenarioDefinition:
        problems = graph_problems(
            [n.id for n in self.nodes],
            [(e.source, e.target, e.label) for e in self.edges],
            self.entry_node,
            has_turn_limit=self.max_turns is not None,
            end=END,
        )
        if problems:
            raise ValueError(f"scenario {self.id!r}: " + "; ".join(problems))
        return self

    def node(self, node_id: str) -> ScenarioNode:
        """The node with ``node_id``.

        Raises:
            KeyError: no such node.
        """
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(f"scenario {self.id!r} has no node {node_id!r}")

    def outgoing(self, node_id: str) -> list[ScenarioEdge]:
        """The edges leaving ``node_id``, in definition order."""
        return [e for e in self.edges if e.source == node_id]

    @property
    def turn_limit(self) -> int:
        """The most turns a run may take: ``max_turns``, else the node count (an
        acyclic graph cannot visit more nodes than it has)."""
        return self.max_turns if self.max_turns is not None else len(self.nodes)
