"""Scenarios of the original framework's JSON-LD checkpoints (``DataFeed.hasPart``).

A ``karenina:Scenario`` part holds ``name``, ``description``, ``entryNode``,
``nodes`` (node id → ``karenina:ScenarioNode`` with a schema.org ``Question``,
the full question as ``questionData``, ``modelOverride``, ``metadata``), ``edges``
(``source``, ``target``, ``condition``: one state check or a list) and
``outcomeCriteria`` (``name``, ``description``, ``check`` tree). The checkpoint has
no turn limit of its own: the original runs every scenario with a configured
limit of 20 turns, which is what a scenario gets here unless its ``metadata``
names ``max_turns``.

Python code in a scenario (``stateUpdateSource``, ``conditionSource``,
``evaluateSource``) is kept as source and run in the sandbox, like a template's
code; handover strategies (``handover``), agent identities (``agentIdentity``)
and MCP tool filters (``toolFilter``) are kept too. A problem is named by its
node, edge or criterion, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from verifleet.errors import VerifleetError

from ._model import HANDOVERS, ScenarioDefinition

__all__ = ["DEFAULT_CHECKPOINT_TURN_LIMIT", "is_scenario_part", "scenario_from_jsonld"]

DEFAULT_CHECKPOINT_TURN_LIMIT = 20
"""The original framework's default ``scenario_turn_limit``."""

_MODEL_FIELDS = (
    "id",
    "model_name",
    "model_provider",
    "interface",
    "endpoint_base_url",
    "temperature",
    "max_tokens",
    "system_prompt",
    "mcp_urls_dict",
    "extra_kwargs",
)


class ScenarioPartError(VerifleetError, ValueError):
    """A scenario part that cannot be read (the message names what is at fault)."""


def is_scenario_part(part: object) -> bool:
    """Whether a ``hasPart`` entry is a scenario."""
    return isinstance(part, Mapping) and (
        str(part.get("@type", "")).endswith("Scenario") or "entryNode" in part
    )


def _text(node: object) -> str | None:
    if isinstance(node, Mapping) and isinstance(node.get("text"), str):
        return str(node["text"])
    return None


def _question(node_id: str, node: Mapping[str, object]) -> dict[str, object]:
    data = node.get("questionData")
    if isinstance(data, Mapping):
        question: dict[str, object] = {
            "text": data.get("question", data.get("text")),
            "raw_answer": data.get("raw_answer"),
            "answer_template": data.get("answer_template"),
        }
        if data.get("few_shot_examples"):
            question["few_shot_examples"] = data["few_shot_examples"]
        tags = data.get("tags", data.get("keywords"))
        if isinstance(tags, list):
            question["keywords"] = [str(t) for t in tags if t is not None]
        if isinstance(data.get("id"), str) and data["id"]:
            question["id"] = data["id"]
        return {k: v for k, v in question.items() if v is not None}
    schema_question = node.get("question")
    if not isinstance(schema_question, Mapping):
        raise ScenarioPartError(f"node {node_id!r} has no question")
    return {
        k: v
        for k, v in {
            "text": schema_question.get("text"),
            "raw_answer": _text(schema_question.get("acceptedAnswer")),
            "answer_template": _text(schema_question.get("hasPart")) or None,
        }.items()
        if v is not None
    }


def _model(value: object) -> dict[str, object] | None:
    if not isinstance(value, Mapping):
        return None
    return {k: value[k] for k in _MODEL_FIELDS if value.get(k) is not None}


def _node(node_id: str, node: object) -> dict[str, object]:
    if not isinstance(node, Mapping):
        raise ScenarioPartError(f"node {node_id!r} must be an object")
    result: dict[str, object] = {
        "id": str(node.get("nodeId") or node_id),
        "question": _question(node_id, node),
        "metadata": dict(node.get("metadata") or {}),
        "state_update_source": node.get("stateUpdateSource") or None,
        "agent_identity": node.get("agentIdentity") or None,
        "tool_filter": node.get("toolFilter") or None,
    }
    override = node.get("modelOverride")
    if isinstance(override, Mapping):
        for role in ("answering_model", "parsing_model"):
            model = _model(override.get(role))
            if model:
                result[role] = model
    return result


def _edge(index: int, edge: object) -> dict[str, object]:
    if not isinstance(edge, Mapping):
        raise ScenarioPartError(f"edge #{index + 1} must be an object")
    label = f"{edge.get('source')} -> {edge.get('target')}"
    handover = edge.get("handover")
    if handover is not None and handover not in HANDOVERS:
        raise ScenarioPartError(
            f"edge {label}: unknown handover strategy {handover!r} (known: {', '.join(HANDOVERS)})"
        )
    return {
        "source": edge.get("source"),
        "target": edge.get("target"),
        "when": edge.get("condition"),
        "condition_source": edge.get("conditionSource") or None,
        "handover": handover,
        "handover_source": edge.get("handoverSource") or None,
    }


def _criterion(criterion: object) -> dict[str, object]:
    if not isinstance(criterion, Mapping):
        raise ScenarioPartError("an outcome criterion must be an object")
    return {
        "name": criterion.get("name"),
        "description": criterion.get("description") or "",
        "check": criterion.get("check") or None,
        "evaluate_source": criterion.get("evaluateSource") or None,
    }


def scenario_from_jsonld(part: Mapping[str, object]) -> ScenarioDefinition:
    """Build a scenario from one ``hasPart`` entry.

    Raises:
        ValueError: the part is malformed, uses Python code or unsupported
            features, or fails the graph checks; the message names the node,
            edge or criterion at fault.
    """
    nodes = part.get("nodes")
    if not isinstance(nodes, Mapping) or not nodes:
        raise ScenarioPartError("a scenario needs nodes (an object of node id -> node)")
    # Whatever mapping (or pairs) the part holds; dict() rejects anything else.
    raw_metadata: Any = part.get("metadata") or {}
    metadata = dict(raw_metadata)
    limit = metadata.get("max_turns", metadata.get("turn_limit", DEFAULT_CHECKPOINT_TURN_LIMIT))
    edges = part.get("edges") or []
    criteria = part.get("outcomeCriteria") or []
    if not isinstance(edges, list) or not isinstance(criteria, list):
        raise ScenarioPartError("edges and outcomeCriteria must be lists")
    data = {
        "id": part.get("name"),
        "description": part.get("description") or "",
        "entry_node": part.get("entryNode"),
        "nodes": [_node(str(k), v) for k, v in nodes.items()],
        "edges": [_edge(i, e) for i, e in enumerate(edges)],
        "outcome_criteria": [_criterion(c) for c in criteria],
        "max_turns": limit,
        "metadata": metadata,
    }
    try:
        return ScenarioDefinition.model_validate(data)
    except ValidationError as exc:
        raise ScenarioPartError(validation_problem(exc, data)) from None


def validation_problem(exc: ValidationError, data: Mapping[str, object]) -> str:
    """One line per distinct problem, each naming the node, edge or criterion
    (rather than its position) and stated once."""
    parts: list[str] = []
    for error in exc.errors():
        message = str(error["msg"]).removeprefix("Value error, ")
        name, rest = _where(error["loc"], data)
        if name and name in message:
            line = message
        else:
            where = " ".join(p for p in (name, rest) if p)
            line = f"{where}: {message}" if where else message
        if line not in parts:
            parts.append(line)
    return "; ".join(parts)


_NAMES = {
    "outcome_criteria": lambda item: f"outcome criterion {item.get('name')!r}",
    "nodes": lambda item: f"node {item.get('id')!r}",
    "edges": lambda item: f"edge {item.get('source')} -> {item.get('target')}",
}


def _where(loc: tuple[object, ...], data: Mapping[str, object]) -> tuple[str, str]:
    """How an error's location is named: (``outcome criterion 'x'`` / ``node
    'x'`` / ``edge a -> b``, the field path inside it), or ("", the bare path)."""
    if len(loc) >= 2 and isinstance(loc[1], int) and str(loc[0]) in _NAMES:
        items = data.get(str(loc[0]))
        item = items[loc[1]] if isinstance(items, list) and loc[1] < len(items) else None
        if isinstance(item, Mapping):
            return _NAMES[str(loc[0])](item), ".".join(str(p) for p in loc[2:])
    return "", ".".join(str(p) for p in loc)
