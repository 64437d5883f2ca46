"""Answer traces: normalising message lists, rendering them as text, and finding
the final AI message that template parsing and rubric evaluation read."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from verifleet.errors import TraceError

__all__ = ["TraceError", "final_ai_message", "normalise_trace", "render_trace"]

_ROLE_ALIASES = {"ai": "assistant", "human": "user", "function": "tool"}


def normalise_trace(messages: Sequence[object]) -> list[dict[str, object]]:
    """Messages as ``{"role": ..., "content": str, ...}`` dicts.

    Accepts OpenAI-style (``role``) and langchain-style (``type``) dicts; extra keys
    such as ``tool_calls`` or ``name`` are kept.

    Raises:
        TraceError: an element is not a mapping or has no role.
    """
    out: list[dict[str, object]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise TraceError(f"trace message {index} is a {type(message).__name__}, not an object")
        role = message.get("role") or message.get("type")
        if not isinstance(role, str) or not role:
            raise TraceError(f"trace message {index} has no role")
        content = message.get("content", "")
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False, default=str)
        entry = {key: value for key, value in message.items() if key not in ("type",)}
        entry["role"] = _ROLE_ALIASES.get(role.lower(), role.lower())
        entry["content"] = content
        out.append(entry)
    return out


def render_trace(messages: Sequence[Mapping[str, object]]) -> str:
    """The trace as readable text (what ``raw_llm_response`` holds for traces)."""
    blocks = []
    for message in messages:
        header = f"--- {message.get('role', '?')}"
        if message.get("name"):
            header += f" ({message['name']})"
        body = str(message.get("content", ""))
        calls = message.get("tool_calls")
        if calls:
            body += "\n[tool calls] " + json.dumps(calls, ensure_ascii=False, default=str)
        blocks.append(f"{header} ---\n{body}".rstrip())
    return "\n\n".join(blocks)


def final_ai_message(messages: Sequence[Mapping[str, object]]) -> str:
    """Content of the last message, which must be a non-empty AI message.

    Raises:
        TraceError: the trace is empty, ends with a non-AI message, or the final
            AI message is empty (e.g. it only carries tool calls).
    """
    if not messages:
        raise TraceError("the trace is empty")
    last = messages[-1]
    role = last.get("role")
    if role != "assistant":
        raise TraceError(f"the trace does not end with an AI message (last message: {role})")
    content = str(last.get("content", "")).strip()
    if not content:
        detail = " (tool calls only)" if last.get("tool_calls") else ""
        raise TraceError(f"the final AI message has no text{detail}")
    return content
