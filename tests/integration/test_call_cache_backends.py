"""The one backend set of the model-call cache (in-process LRU, SQLite file,
Redis) keeps the same semantics: the first reply stored is kept, and a caller
that raced another and lost answers with it, so two workers (or a replayed unit)
agree on one reply. Redis is a real redis-server; the models are scripted
callers whose reply changes with every call (a real temperature-0 server cannot
be made to vary on demand)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from _support.judges import CallKind, ScriptedCallerBase

from verifleet.pipeline import (
    CachingCaller,
    CallCache,
    DiskCallCache,
    MemoryCallCache,
    Message,
    UsageTracker,
    call_key,
)
from verifleet.schemas import ModelConfig
from verifleet.store import RedisCallCache

pytestmark = pytest.mark.integration

MODEL = ModelConfig.parse("http://127.0.0.1:1/v1#judge")
MESSAGES: list[Message] = [{"role": "user", "content": "Is Paris in France?"}]


class Racing(ScriptedCallerBase):
    """A model whose call lets ``meanwhile`` run to its end before it replies:
    the other caller's miss, call and write all happen while this call is in
    flight, as when two workers take the same call at once."""

    model_name = "judge"

    def __init__(self, reply: str, meanwhile: Callable[[], object] | None = None) -> None:
        self.reply, self.meanwhile, self.calls = reply, meanwhile, 0

    def _reply(
        self, kind: CallKind, messages: list[Message], stage: str, schema: dict[str, Any] | None
    ) -> Any:
        self.calls += 1
        if self.meanwhile is not None:
            self.meanwhile()
        return self.reply


def _backend(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> CallCache:
    if kind == "memory":
        return MemoryCallCache()
    if kind == "disk":
        return DiskCallCache(tmp_path / "calls.sqlite3")
    client = redis.Redis.from_url(request.getfixturevalue("redis_url"))
    return RedisCallCache(client, prefix="race")


@pytest.mark.parametrize("kind", ["memory", "disk", "redis"])
def test_two_callers_racing_agree_on_the_first_reply_stored(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    cache = _backend(kind, tmp_path, request)
    late = Racing("reply B")
    second = CachingCaller(MODEL, lambda _own: late, UsageTracker(), cache)
    early = Racing("reply A", meanwhile=lambda: second.invoke(MESSAGES, stage="parsing"))
    first = CachingCaller(MODEL, lambda _own: early, UsageTracker(), cache)
    # Both missed and both models were asked; B's reply was stored first.
    assert first.invoke(MESSAGES, stage="parsing") == "reply B"
    assert (early.calls, late.calls) == (1, 1)
    # Every later lookup (another process, a replay) gets the same reply.
    third = CachingCaller(MODEL, lambda _own: Racing("reply C"), UsageTracker(), cache)
    assert third.invoke(MESSAGES, stage="parsing") == "reply B"
    stored = cache.get(call_key(MODEL, MESSAGES))
    assert stored is not None and b"reply B" in stored


def test_an_expired_entry_gives_way_to_a_new_reply(tmp_path: Path) -> None:
    """Keeping the first reply must not keep an expired one for ever: a negative
    TTL makes every entry already expired, without waiting on a clock."""
    cache = DiskCallCache(tmp_path / "calls.sqlite3", ttl_seconds=-1)
    assert cache.put("k", b"old") == b"old"
    assert cache.get("k") is None
    assert cache.put("k", b"new") == b"new"
    fresh = DiskCallCache(tmp_path / "calls.sqlite3")
    assert fresh.get("k") == b"new"
    assert fresh.put("k", b"newer") == b"new"
