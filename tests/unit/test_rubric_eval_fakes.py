"""A scripted judge for the rubric-evaluation tests, and tests of the script itself.

A real model cannot be told to return one malformed value or to fail schema
validation on the third call, so the rubric tests drive a ``ChatCaller`` that
replays queued replies and records every prompt it was sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from _support.judges import CallKind, ScriptedCallerBase

from verifleet.pipeline._llm_protocol import ChatCaller, Message, StructuredOutputError

Reply = dict[str, Any] | str | Exception


@dataclass
class Call:
    """One recorded judge call."""

    kind: CallKind
    messages: list[Message]
    stage: str
    schema: dict[str, Any] | None

    @property
    def system(self) -> str:
        return self.messages[0]["content"]

    @property
    def user(self) -> str:
        return self.messages[-1]["content"]


class ScriptedJudge(ScriptedCallerBase):
    """Replays ``replies`` in order; an ``Exception`` reply is raised instead."""

    model_name = "scripted-judge"

    def __init__(self, replies: Sequence[Reply] = ()) -> None:
        self._replies = list(replies)
        self.calls: list[Call] = []

    def _reply(
        self, kind: CallKind, messages: list[Message], stage: str, schema: dict[str, Any] | None
    ) -> Reply:
        self.calls.append(Call(kind, messages, stage, schema))
        if not self._replies:
            raise AssertionError(f"unexpected judge call #{len(self.calls)}: script exhausted")
        return self._replies.pop(0)

    @property
    def remaining(self) -> int:
        return len(self._replies)


def bad_json() -> StructuredOutputError:
    """What the real caller raises when the judge never returns schema-valid JSON."""
    return StructuredOutputError("reply did not match the schema", raw="{oops")


def test_scripted_judge_is_a_chat_caller() -> None:
    assert isinstance(ScriptedJudge(), ChatCaller)


def test_scripted_judge_replays_in_order_and_records_calls() -> None:
    judge = ScriptedJudge([{"a": 1}, "text"])
    assert judge.invoke_json([{"role": "user", "content": "q"}], stage="s", schema={}) == {"a": 1}
    assert judge.invoke([{"role": "user", "content": "r"}], stage="t") == "text"
    assert [c.kind for c in judge.calls] == ["json", "text"]
    assert judge.calls[1].user == "r"


def test_scripted_judge_raises_queued_errors_and_refuses_extra_calls() -> None:
    judge = ScriptedJudge([bad_json()])
    with pytest.raises(StructuredOutputError):
        judge.invoke_json([], stage="s", schema={})
    with pytest.raises(AssertionError, match="script exhausted"):
        judge.invoke([], stage="s")


def test_scripted_judge_refuses_a_reply_of_the_wrong_kind() -> None:
    judge = ScriptedJudge(["text", {"a": 1}])
    with pytest.raises(AssertionError, match="JSON call got a str"):
        judge.invoke_json([], stage="s", schema={})
    with pytest.raises(AssertionError, match="text call got a dict"):
        judge.invoke([], stage="s")
    assert judge.remaining == 0
