"""The model-call cache in one process (the reward server's default): keys cover
the full input (``call_key``), repeated calls are served from the cache, the first
stored reply wins, the least recently used entry goes first."""

from __future__ import annotations

from typing import Any

import pytest
from _support.judges import CallKind, ScriptedCallerBase

from verifleet.pipeline import CachingCaller, MemoryCallCache, Message, UsageTracker, call_key
from verifleet.schemas import ModelConfig

JUDGE = ModelConfig.parse("http://127.0.0.1:1/v1#judge")
MESSAGES: list[Message] = [{"role": "user", "content": "Is Paris in France?"}]
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


class CountingCaller(ScriptedCallerBase):
    """A scripted judge whose reply changes with every call: it shows whether a
    call reached the model (a real temperature-0 server cannot be made to vary
    on demand)."""

    model_name = "judge"

    def __init__(self) -> None:
        self.calls = 0

    def _reply(
        self, kind: CallKind, messages: list[Message], stage: str, schema: dict[str, Any] | None
    ) -> Any:
        self.calls += 1
        return (
            f"reply {self.calls}"
            if kind == "text"
            else {"ok": self.calls % 2 == 1, "n": self.calls}
        )


def caching(inner: CountingCaller, model: ModelConfig, cache: MemoryCallCache) -> CachingCaller:
    return CachingCaller(model, lambda _own: inner, UsageTracker(), cache)


def json_key(model: ModelConfig, messages: list[Message], schema: dict[str, Any]) -> str:
    """The key a JSON call is filed under (CachingCaller's default schema name)."""
    return call_key(model, messages, kind="json", schema=schema, schema_name="response")


def test_key_depends_on_model_settings_messages_and_schema() -> None:
    base = json_key(JUDGE, MESSAGES, SCHEMA)
    assert base == json_key(JUDGE, [dict(m) for m in MESSAGES], dict(SCHEMA))
    assert base != json_key(JUDGE.model_copy(update={"temperature": 0.5}), MESSAGES, SCHEMA)
    assert base != json_key(JUDGE.model_copy(update={"model_name": "other"}), MESSAGES, SCHEMA)
    assert base != json_key(JUDGE, [{"role": "user", "content": "Is Rome in France?"}], SCHEMA)
    assert base != json_key(JUDGE, MESSAGES, {"type": "object"})
    assert base != call_key(JUDGE, MESSAGES)
    # The model's id is a label, not an input of the call.
    assert base == json_key(JUDGE.model_copy(update={"id": "renamed"}), MESSAGES, SCHEMA)


def test_repeated_calls_are_answered_from_the_cache() -> None:
    inner, cache = CountingCaller(), MemoryCallCache()
    caller = caching(inner, JUDGE, cache)
    first = caller.invoke_json(MESSAGES, stage="parsing", schema=SCHEMA)
    again = caller.invoke_json(MESSAGES, stage="parsing", schema=SCHEMA)
    assert first == again == {"n": 1, "ok": True}
    assert cache.get(json_key(JUDGE, MESSAGES, SCHEMA)) is not None
    assert inner.calls == 1
    assert caller.invoke(MESSAGES, stage="parsing") == caller.invoke(MESSAGES, stage="parsing")
    assert inner.calls == 2
    # A new caller (another unit) on the same cache reuses the replies.
    other = caching(CountingCaller(), JUDGE, cache)
    assert other.invoke_json(MESSAGES, stage="rubric", schema=SCHEMA) == first
    assert cache.stats()["hits"] == 4


def test_first_reply_wins_and_lru_evicts_oldest() -> None:
    cache = MemoryCallCache(max_entries=2)
    assert cache.put("a", b"1") == b"1"
    assert cache.put("a", b"2") == b"1"
    cache.put("b", b"x")
    cache.get("a")
    cache.put("c", b"y")
    assert cache.get("b") is None
    assert cache.get("a") == b"1"
    assert cache.stats()["entries"] == 2
    assert cache.clear() == 2 and cache.get("a") is None


def test_judges_called_with_two_keys_never_share_a_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_KEY_1", "sk-tenant-a")
    monkeypatch.setenv("JUDGE_KEY_2", "sk-tenant-b")
    monkeypatch.setenv("JUDGE_KEY_3", "sk-tenant-a")
    cache, inner = MemoryCallCache(), CountingCaller()

    def judge(env_name: str) -> CachingCaller:
        return caching(inner, JUDGE.model_copy(update={"api_key_env": env_name}), cache)

    first = judge("JUDGE_KEY_1").invoke(MESSAGES, stage="parsing")
    assert judge("JUDGE_KEY_2").invoke(MESSAGES, stage="parsing") != first
    # The same key's value under another variable is the same credential.
    assert judge("JUDGE_KEY_3").invoke(MESSAGES, stage="parsing") == first
    assert inner.calls == 2
