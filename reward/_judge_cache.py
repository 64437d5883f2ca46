"""A cache of judge calls keyed by their full input, so a response always gets the
same reward.

A temperature-0 judge is not bit-for-bit deterministic across servers, batches or
restarts; caching its reply by (model, messages, schema) makes a re-verification
of the same response reuse the first reply. The key is the model-call cache's
(:func:`~verifleet.pipeline.call_key`, the one key of a model call in verifleet):
it covers every model setting that changes the reply and the credential (an HMAC
of the API key's value, never the key: ``credential_identity``), so two judges,
or one judge behind a gateway called with two keys, never share an entry. With
Redis the first reply stored wins fleet-wide: a process that raced another and
lost adopts the stored reply.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

import redis

from verifleet.pipeline import (
    CallerFactory,
    CallGate,
    ChatCaller,
    ChatModelCache,
    Message,
    ModelCallError,
    UsageTracker,
    bridged_sleep,
    call_key,
    make_chat_caller,
)
from verifleet.schemas import ModelConfig, VerificationConfig

from ._failure import classify_model_error, note

__all__ = [
    "JudgeCache",
    "JudgeCachingCaller",
    "MemoryJudgeCache",
    "RedisJudgeCache",
    "caching_caller_factory",
]


class JudgeCache(Protocol):
    """Where judge replies are kept; values are reply text (JSON text for objects)."""

    def get(self, key: str) -> str | None:
        """The stored reply, or None."""
        ...

    def put(self, key: str, value: str) -> str:
        """Store ``value`` unless a reply is already stored; return the stored one."""
        ...


class MemoryJudgeCache:
    """An in-process LRU of judge replies, safe for threads.

    Args:
        max_entries: Replies kept; the least recently used go first.
    """

    def __init__(self, max_entries: int = 100_000) -> None:
        self._max = max_entries
        self._lock = threading.Lock()
        self._items: OrderedDict[str, str] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def get(self, key: str) -> str | None:
        """The stored reply (counted as a hit), or None (a miss)."""
        with self._lock:
            value = self._items.get(key)
            if value is None:
                self.misses += 1
                return None
            self.hits += 1
            self._items.move_to_end(key)
            return value

    def put(self, key: str, value: str) -> str:
        """Keep the first reply stored under ``key``; return it."""
        with self._lock:
            kept = self._items.setdefault(key, value)
            self._items.move_to_end(key)
            while len(self._items) > self._max:
                self._items.popitem(last=False)
            return kept


class RedisJudgeCache:
    """Judge replies shared through Redis, in front of an in-process LRU.

    Args:
        client: The Redis client.
        prefix: Key prefix (``<prefix>:judge:<sha256>``).
        ttl_seconds: Expiry of an entry; None keeps entries until evicted.
        local: The in-process layer (a fresh LRU by default).

    Raises:
        redis.RedisError: from :meth:`get`/:meth:`put` when Redis is unreachable;
            a reward computed without the shared cache could differ, so this is
            not swallowed.
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = "vf",
        ttl_seconds: int | None = 30 * 24 * 3600,
        local: MemoryJudgeCache | None = None,
    ) -> None:
        self._client = client
        self._prefix = prefix
        self._ttl = ttl_seconds
        self.local = local or MemoryJudgeCache()

    def _key(self, key: str) -> str:
        return f"{self._prefix}:judge:{key}"

    def get(self, key: str) -> str | None:
        """The reply from the local layer, else from Redis (then kept locally)."""
        value = self.local.get(key)
        if value is not None:
            return value
        raw = self._client.get(self._key(key))
        if raw is None:
            return None
        text = raw.decode() if isinstance(raw, bytes) else str(raw)
        return self.local.put(key, text)

    def put(self, key: str, value: str) -> str:
        """Store with SET NX: the first reply stored anywhere in the fleet wins."""
        stored = self._client.set(self._key(key), value, nx=True, ex=self._ttl)
        if not stored:
            raw = self._client.get(self._key(key))
            if raw is not None:
                value = raw.decode() if isinstance(raw, bytes) else str(raw)
        return self.local.put(key, value)


class JudgeCachingCaller:
    """A :class:`~verifleet.pipeline.ChatCaller` that answers repeated calls from
    a :class:`JudgeCache`. Cached replies cost no tokens, so usage shows only
    the calls that reached the model.

    Errors of the wrapped caller (``ModelCallError``, ``StructuredOutputError``)
    pass through and nothing is cached for them; a ``ModelCallError`` that says
    the judge was unreachable, refused or out of time is also noted as an
    infrastructure failure of the scoring under way (:mod:`._failure`).
    """

    def __init__(self, inner: ChatCaller, model: ModelConfig, cache: JudgeCache) -> None:
        self._inner = inner
        self._model = model
        self._cache = cache

    @property
    def model_name(self) -> str:
        """The wrapped caller's model name."""
        return self._inner.model_name

    def invoke(self, messages: Sequence[Message], *, stage: str) -> str:
        """The cached reply to ``messages``, else the model's (then cached)."""
        key = call_key(self._model, messages)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        try:
            reply = self._inner.invoke(messages, stage=stage)
        except ModelCallError as exc:
            _note(exc)
            raise
        return self._cache.put(key, reply)

    def invoke_json(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        schema: dict[str, Any],
        schema_name: str = "response",
    ) -> dict[str, Any]:
        """The cached object for (messages, schema), else the model's (then cached)."""
        key = call_key(self._model, messages, kind="json", schema=schema, schema_name=schema_name)
        cached = self._cache.get(key)
        if cached is None:
            try:
                value = self._inner.invoke_json(
                    messages, stage=stage, schema=schema, schema_name=schema_name
                )
            except ModelCallError as exc:
                _note(exc)
                raise
            cached = self._cache.put(key, json.dumps(value, sort_keys=True, ensure_ascii=False))
        parsed: dict[str, Any] = json.loads(cached)
        return parsed


def _note(exc: ModelCallError) -> None:
    kind = classify_model_error(exc)
    if kind is not None:
        note(kind, str(exc))


def caching_caller_factory(
    cache: JudgeCache,
    *,
    clients: ChatModelCache,
    call_gate: CallGate | None = None,
    inner: CallerFactory | None = None,
) -> CallerFactory:
    """A ``PipelineResources.caller_factory`` whose callers go through ``cache``.

    Args:
        cache: The judge-call cache.
        clients: The process's chat-client cache (for the langchain caller).
        call_gate: The fleet-wide limiter, if any.
        inner: Builds the uncached caller; when None, the model's own
            (:func:`~verifleet.pipeline.make_chat_caller`: the direct HTTP caller
            for OpenAI-compatible endpoints), whose retry pauses let an event loop
            run when the scoring is bridged.
    """

    def factory(
        model: ModelConfig,
        *,
        tracker: UsageTracker,
        config: VerificationConfig,
        deadline: float | None,
    ) -> ChatCaller:
        if inner is not None:
            base = inner(model, tracker=tracker, config=config, deadline=deadline)
        else:
            base = make_chat_caller(
                model,
                tracker=tracker,
                clients=clients,
                policy=config.retry_policy,
                request_timeout=config.request_timeout,
                deadline=deadline,
                call_gate=call_gate,
                sleep=bridged_sleep,
            )
        return JudgeCachingCaller(base, model, cache)

    return factory
