"""The judge-call cache: keys cover the full input (the model-call cache's own
key, ``call_key``), repeated calls are served from the cache, the first stored
reply wins."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from verifleet.pipeline import Message, call_key
from verifleet.reward import JudgeCachingCaller, MemoryJudgeCache
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


def judge_call_key(
    model: ModelConfig,
    messages: list[Message],
    *,
    schema: dict[str, Any] | None = None,
) -> str:
    """The key the judge cache files a call under: a JSON call's with a schema."""
    if schema is None:
        return call_key(model, messages)
    return call_key(model, messages, kind="json", schema=schema, schema_name="response")


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
    caller = JudgeCachingCaller(inner, JUDGE, cache)
    first = caller.invoke_json(MESSAGES, stage="parsing", schema=SCHEMA)
    again = caller.invoke_json(MESSAGES, stage="parsing", schema=SCHEMA)
    assert first == again == {"n": 1, "ok": True}
    # Filed under the one key of a model call, the same a run's call cache uses.
    assert cache.get(judge_call_key(JUDGE, MESSAGES, schema=SCHEMA)) is not None
    assert inner.calls == 1
    assert caller.invoke(MESSAGES, stage="parsing") == caller.invoke(MESSAGES, stage="parsing")
    assert inner.calls == 2
    # A new caller (another unit) on the same cache reuses the replies.
    other = JudgeCachingCaller(CountingCaller(), JUDGE, cache)
    assert other.invoke_json(MESSAGES, stage="rubric", schema=SCHEMA) == first
    assert cache.hits == 4


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


def test_judges_called_with_two_keys_never_share_a_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_KEY_1", "sk-tenant-a")
    monkeypatch.setenv("JUDGE_KEY_2", "sk-tenant-b")
    monkeypatch.setenv("JUDGE_KEY_3", "sk-tenant-a")
    cache, inner = MemoryJudgeCache(), CountingCaller()

    def judge(env_name: str) -> JudgeCachingCaller:
        return JudgeCachingCaller(inner, JUDGE.model_copy(update={"api_key_env": env_name}), cache)

    first = judge("JUDGE_KEY_1").invoke(MESSAGES, stage="parsing")
    assert judge("JUDGE_KEY_2").invoke(MESSAGES, stage="parsing") != first
    # The same key's value under another variable is the same credential.
    assert judge("JUDGE_KEY_3").invoke(MESSAGES, stage="parsing") == first
    assert inner.calls == 2
