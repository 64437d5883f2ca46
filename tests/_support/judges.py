"""A scripted judge for tests of the checks' prompt building and reply handling.

It implements the pipeline's ``ChatCaller`` protocol, returns queued JSON replies
(or raises queued exceptions) and records every call. No real model returns a
chosen reply, or a malformed one, on demand; the real langchain caller is tested
against HTTP endpoints elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from verifleet.pipeline import Message

__all__ = ["ScriptedJudge"]


class ScriptedJudge:
    """Returns queued replies in order and records every call."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []

    @property
    def model_name(self) -> str:
        return "scripted-judge"

    def invoke(self, messages: Sequence[Message], *, stage: str) -> str:
        raise AssertionError("the checks must ask for JSON")

    def invoke_json(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        schema: dict[str, Any],
        schema_name: str = "response",
    ) -> dict[str, Any]:
        self.calls.append({"messages": list(messages), "stage": stage, "schema": schema})
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply  # may be malformed on purpose: tests of reply validation

    def text(self, index: int = 0) -> str:
        """Every message of call ``index``, joined."""
        return "\n".join(m["content"] for m in self.calls[index]["messages"])

    def user(self, index: int) -> str:
        """The user message of call ``index``."""
        return str(self.calls[index]["messages"][1]["content"])
