"""An agent run's langchain messages as the trace a result stores, and the
``agent_metrics`` the specification describes, computed from that trace."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

__all__ = ["ERROR_PATTERN", "agent_metrics", "trace_of"]

_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}

#: Tool outputs matching this look like failures (an error status always counts):
#: the words a failing API, a crashing tool or a missing resource tends to print.
ERROR_PATTERN = re.compile(
    r"\b(error|failed|failure|exception|traceback|stack\s+trace|timed?\s*out|timeout"
    r"|invalid|unauthori[sz]ed|forbidden|not\s+found|cannot|unable\s+to|40[0134]|50[0234])\b",
    re.IGNORECASE,
)


def _text(content: Any) -> str:
    """Message content as text: MCP tools answer with lists of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            else:
                parts.append(json.dumps(block, ensure_ascii=False, default=str))
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False, default=str)


def trace_of(messages: Sequence[BaseMessage], system_prompt: str | None) -> list[dict[str, Any]]:
    """``trace_messages`` of a run: system, user, assistant (with ``tool_calls``
    ``[{id, name, args}]``) and tool messages (``tool_call_id``, ``name``,
    ``status``), in order.

    ``system_prompt`` is the agent's system prompt, which langchain's agent keeps
    outside its message state; it opens the trace when set. Never fails: unknown
    message types keep their langchain type as role.
    """
    out: list[dict[str, Any]] = []
    if system_prompt:
        out.append({"role": "system", "content": system_prompt})
    for message in messages:
        if isinstance(message, SystemMessage) and system_prompt:
            continue
        entry: dict[str, Any] = {
            "role": _ROLES.get(message.type, message.type),
            "content": _text(message.content),
        }
        if isinstance(message, AIMessage) and message.tool_calls:
            entry["tool_calls"] = [
                {"id": call.get("id"), "name": call["name"], "args": call.get("args", {})}
                for call in message.tool_calls
            ]
        if isinstance(message, ToolMessage):
            entry["tool_call_id"] = message.tool_call_id
            entry["name"] = message.name
            entry["status"] = message.status
        out.append(entry)
    return out


def agent_metrics(trace: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The spec's ``agent_metrics`` of a trace.

    ``iterations``: assistant messages (think-act cycles); ``tool_calls``: tool
    results; ``tools_used``: distinct tool names called, sorted;
    ``suspect_failed_tool_calls`` / ``suspect_failed_tools``: tool results with an
    error status or error-like text (:data:`ERROR_PATTERN`). A heuristic: a tool
    that reports "0 errors found" counts as suspect too. Never fails.
    """
    names_by_id: dict[str, str] = {}
    iterations = 0
    used: set[str] = set()
    for message in trace:
        if message.get("role") != "assistant":
            continue
        iterations += 1
        for call in message.get("tool_calls") or []:
            used.add(str(call.get("name")))
            if call.get("id"):
                names_by_id[str(call["id"])] = str(call.get("name"))
    tool_calls = 0
    suspects = 0
    failed: set[str] = set()
    for message in trace:
        if message.get("role") != "tool":
            continue
        tool_calls += 1
        name = message.get("name") or names_by_id.get(str(message.get("tool_call_id")), "?")
        used.add(str(name))
        if message.get("status") == "error" or ERROR_PATTERN.search(str(message.get("content"))):
            suspects += 1
            failed.add(str(name))
    return {
        "iterations": iterations,
        "tool_calls": tool_calls,
        "tools_used": sorted(used),
        "suspect_failed_tool_calls": suspects,
        "suspect_failed_tools": sorted(failed),
    }
