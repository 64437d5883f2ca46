"""Scripted judges: ``ChatCaller``s that return queued replies and record every call.

No real model returns a chosen reply, a malformed one or a failure on demand, so
tests of prompt building and reply handling drive these instead; the real callers
are tested against HTTP endpoints elsewhere. :class:`ScriptedCallerBase` holds what
every scripted caller of the tests shares (the test modules' own scripts subclass
it); :class:`ScriptedJudge` is the plain one for the checks and the reward judges.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from verifleet.pipeline import Message

__all__ = ["CallKind", "ScriptedCallerBase", "ScriptedJudge"]

CallKind = Literal["text", "json"]


class ScriptedCallerBase:
    """``invoke``/``invoke_json`` for a scripted caller: each call goes to
    :meth:`_reply`, which records it and returns its scripted reply.

    A reply that is an exception is raised. A text call must get a string and a JSON
    call a dict (unless ``checks_json_replies`` is False, for tests that feed malformed
    replies on purpose), so a mis-scripted test fails with an ``AssertionError`` at the
    call that went wrong.
    """

    checks_json_replies: bool = True

    def _reply(
        self,
        kind: CallKind,
        messages: list[Message],
        stage: str,
        schema: dict[str, Any] | None,
    ) -> Any:
        """Record the call and return its reply (an exception is raised by the caller).

        Raises:
            NotImplementedError: the subclass does not say where replies come from.
        """
        raise NotImplementedError

    def _scripted(
        self, kind: CallKind, messages: Sequence[Message], stage: str, schema: dict[str, Any] | None
    ) -> Any:
        reply = self._reply(kind, list(messages), stage, schema)
        if isinstance(reply, Exception):
            raise reply
        return reply

    def invoke(self, messages: Sequence[Message], *, stage: str) -> str:
        reply = self._scripted("text", messages, stage, None)
        assert isinstance(reply, str), f"stage {stage!r}: text call got a {type(reply).__name__}"
        return reply

    def invoke_json(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        schema: dict[str, Any],
        schema_name: str = "response",
    ) -> dict[str, Any]:
        reply = self._scripted("json", messages, stage, schema)
        if self.checks_json_replies:
            assert isinstance(reply, dict), (
                f"stage {stage!r}: JSON call got a {type(reply).__name__}"
            )
        return reply  # type: ignore[no-any-return]


class ScriptedJudge(ScriptedCallerBase):
    """Returns queued JSON replies in order (raising queued exceptions) and records
    every call as ``{"messages", "stage", "schema"}``.

    Replies go back unchecked, so a test can feed a malformed one on purpose; a text
    call fails the test, since every caller of this judge must ask for JSON.
    """

    checks_json_replies = False

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []

    @property
    def model_name(self) -> str:
        return "scripted-judge"

    def _reply(
        self,
        kind: CallKind,
        messages: list[Message],
        stage: str,
        schema: dict[str, Any] | None,
    ) -> Any:
        if kind == "text":
            raise AssertionError("a text call: callers of this judge must ask for JSON")
        self.calls.append({"messages": messages, "stage": stage, "schema": schema})
        return self.replies.pop(0)

    def text(self, index: int = 0) -> str:
        """Every message of call ``index``, joined."""
        return "\n".join(m["content"] for m in self.calls[index]["messages"])

    def user(self, index: int) -> str:
        """The user message of call ``index``."""
        return str(self.calls[index]["messages"][1]["content"])
