"""The judge-call cache: keys cover the full input, repeated calls are served
from the cache, the first stored reply wins."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from verifleet.pipeline import Message
from verifleet.reward import CachingCaller, MemoryJudgeCache, judge_call_key
from verifleet.schemas import ModelConfig

JUDGE = ModelConfig.parse("http://127.0.0.1:1/v1#judge")
MESSAGES: list[Message] = [{"role": "user", "content": "Is Paris in France?"}]
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


class CountingCaller:
    """A scripted judge whose reply changes with every call: it shows whether a
    call reached the model (a real temperature-0 server cannot be made to vary
    on demand)."""

    def __init__(self) -> None:
        self.calls = 0

    @property
    def model_name(self) -> str:
        return "judge"

    def invoke(self, messages: Sequence[Message], *, stage: str) -> str:
        self.calls += 1
        return f"reply {self.calls}"

    def invoke_json(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        schema: dict[str, Any],
        schema_name: str = "response",
    ) -> dict[str, Any]:
        self.calls += 1
        return {"ok": self.calls % 2 == 1, "n": self.calls}


def test_key_depends_on_model_settings_messages_and_schema() -> None:
    base = judge_call_key(JUDGE, MESSAGES, schema=SCHEMA)
    assert base == judge_call_key(JUDGE, [dict(m) for m in MESSAGES], schema=dict(SCHEMA))
    assert base != judge_call_key(
        JUDGE.model_copy(update={"temperature": 0.5}), MESSAGES, schema=SCHEMA
    )
    assert base != judge_call_key(
        JUDGE.model_copy(update={"model_name": "other"}), MESSAGES, schema=SCHEMA
    )
    assert base != judge_call_key(
        JUDGE, [{"role": "user", "content": "Is Rome in France?"}], schema=SCHEMA
    )
    assert base != judge_call_key(JUDGE, MESSAGES, schema={"type": "object"})
    assert base != judge_call_key(JUDGE, MESSAGES)
    # The model's id is a label, not an input of the call.
    assert base == judge_call_key(
        JUDGE.model_copy(update={"id": "renamed"}), MESSAGES, schema=SCHEMA
    )


def test_repeated_calls_are_answered_from_the_cache() -> None:
    inner, cache = CountingCaller(), MemoryJudgeCache()
    caller = CachingCaller(inner, JUDGE, cache)
    first = caller.invoke_json(MESSAGES, stage="parsing", schema=SCHEMA)
    again = caller.invoke_json(MESSAGES, stage="parsing", schema=SCHEMA)
    assert first == again == {"n": 1, "ok": True}
    assert inner.calls == 1
    assert caller.invoke(MESSAGES, stage="parsing") == caller.invoke(MESSAGES, stage="parsing")
    assert inner.calls == 2
    # A new caller (another unit) on the same cache reuses the replies.
    other = CachingCaller(CountingCaller(), JUDGE, cache)
    assert other.invoke_json(MESSAGES, stage="rubric", schema=SCHEMA) == first
    assert cache.hits == 3


def test_first_reply_wins_and_lru_evicts_oldest() -> None:
    cache = MemoryJudgeCache(max_entries=2)
    assert cache.put("a", "1") == "1"
    assert cache.put("a", "2") == "1"
    cache.put("b", "x")
    cache.get("a")
    cache.put("c", "y")
    assert cache.get("b") is None
    assert cache.get("a") == "1"
    assert len(cache) == 2
