"""The model-call cache: a reply is reused when everything that decides it is the
same, so an identical run (or the unchanged part of a changed one) pays nothing.
docs/iterating.md ("The call cache") states what a key holds, what is never
stored and where the entries live.

A key hashes the model's parameters (every :class:`~verifleet.schemas.ModelConfig`
field not in :data:`NOT_IN_KEY`), the messages, the kind of call, the replicate
index of answer generation and an identity of the credential
(:func:`~verifleet.pipeline.credential_identity`). The backends are
:class:`CallCache` implementations: :class:`MemoryCallCache`,
:class:`~verifleet.pipeline.DiskCallCache` and ``verifleet.store.RedisCallCache``;
runs, reverify and the reward server all go through :class:`CachingCaller`, with
the same semantics in every backend:

- **The first reply is kept.** :meth:`CallCache.put` stores only under a key
  that holds no live entry and returns the entry now stored, so two racing
  callers (or a replay of a redelivered unit) agree on one reply.
- **A store that fails is a miss, counted and logged** (:func:`call_cache_failures`),
  never an error of the call. Where the store is also the fleet's result store,
  the unit's own writes then fail and the worker's Redis retry takes over.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from verifleet.schemas import MODEL_FIELDS_NOT_IN_REPLY, ModelConfig

from .._bridge import call_blocking
from .._llm_protocol import ChatCaller, Message
from ._credential import credential_identity
from ._usage import UsageTracker

_log = logging.getLogger(__name__)

__all__ = [
    "NOT_IN_KEY",
    "CachingCaller",
    "CallCache",
    "MemoryCallCache",
    "call_cache_failures",
    "call_key",
]

T = TypeVar("T")

#: ModelConfig fields that do not change a reply: names, which client carries
#: the request (both send the same one), endpoint limits, and the agent
#: settings that decide what happens after the reply. The credential's
#: variable name is left out because its *value* is keyed (see call_key).
NOT_IN_KEY = MODEL_FIELDS_NOT_IN_REPLY | {"manual_traces_path", "agent_recursion_limit"}

#: Bumped when the key's layout or an entry's shape changes (2: the credential).
_VERSION = 2

#: The stage whose calls are keyed by replicate.
ANSWER_STAGE = "answer_generation"


@runtime_checkable
class CallCache(Protocol):
    """Where cached replies live. Implementations are thread-safe; a missing or
    expired entry is ``None``. They raise when their store fails (a locked
    file, Redis away); their users (:class:`CachingCaller`, the agents' steps)
    then count a failure and call the model (:func:`store_failed`)."""

    def get(self, key: str) -> bytes | None:
        """The entry stored under ``key`` (counted as a hit), or None (a miss)."""
        ...

    def put(self, key: str, value: bytes) -> bytes:
        """Store ``value`` unless ``key`` holds a live entry (the first reply is
        kept; the oldest entries beyond the size bound go); return the entry now
        stored under ``key``: ``value`` or the one stored first."""
        ...

    def stats(self) -> dict[str, Any]:
        """Entries, bytes, hits, misses and the bounds."""
        ...

    def clear(self) -> int:
        """Remove every entry and the counters; returns how many entries went."""
        ...


class MemoryCallCache:
    """A :class:`CallCache` in this process: an LRU, safe for threads, gone with
    the process. Never raises.

    Args:
        max_entries: Entries kept; the least recently used go first.
    """

    def __init__(self, max_entries: int = 100_000) -> None:
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._hits = self._misses = 0

    def get(self, key: str) -> bytes | None:
        """The entry under ``key`` (now the most recently used), or None."""
        with self._lock:
            value = self._items.get(key)
            if value is None:
                self._misses += 1
                return None
            self._hits += 1
            self._items.move_to_end(key)
            return value

    def put(self, key: str, value: bytes) -> bytes:
        """Keep the first entry stored under ``key``; return it."""
        with self._lock:
            kept = self._items.setdefault(key, value)
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)
            return kept

    def stats(self) -> dict[str, Any]:
        """Entries, bytes, hits and misses so far, and the bound."""
        with self._lock:
            return {
                "where": "memory",
                "entries": len(self._items),
                "bytes": sum(len(v) for v in self._items.values()),
                "hits": self._hits,
                "misses": self._misses,
                "max_entries": self.max_entries,
                "ttl_seconds": None,
            }

    def clear(self) -> int:
        """Remove every entry and reset the counters; returns the entries removed."""
        with self._lock:
            removed = len(self._items)
            self._items.clear()
            self._hits = self._misses = 0
            return removed


def _model_part(model: ModelConfig) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude=set(NOT_IN_KEY))


def call_key(
    model: ModelConfig,
    messages: Sequence[Message],
    *,
    kind: str = "text",
    schema: dict[str, Any] | None = None,
    schema_name: str | None = None,
    sample: int | None = None,
) -> str:
    """The cache key of one call: a SHA-256 of everything that decides its reply
    (see the module docstring), the credential's HMAC included (never the key).
    Never fails for JSON-serialisable inputs."""
    payload = {
        "v": _VERSION,
        "model": _model_part(model),
        "credential": credential_identity(model),
        "messages": [dict(m) for m in messages],
        "kind": kind,
        "schema": schema,
        "schema_name": schema_name,
        "sample": sample,
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


_failures_lock = threading.Lock()
_failures = 0


def call_cache_failures() -> int:
    """How many reads and writes of a call cache failed in this process (each
    one a miss or a reply not kept; see :func:`store_failed`)."""
    with _failures_lock:
        return _failures


def store_failed(what: str, exc: Exception) -> None:
    """Count a failed read or write of a call cache and log it.

    A store that fails to read is a miss (the model is called) and one that
    fails to write keeps nothing; neither fails the call. The log is thinned to
    the 1st, 2nd, 4th, 8th, ... failure: with Redis away a busy reward server
    fails every lookup, and one line per lookup would bury the rest of its log.
    """
    global _failures
    with _failures_lock:
        _failures += 1
        count = _failures
    if count & (count - 1) == 0:
        _log.warning(
            "call cache %s failed (%s: %s); calling the model instead (%d failures so far)",
            what,
            type(exc).__name__,
            exc,
            count,
        )


def _entry(blob: bytes | None) -> tuple[Any, dict[str, Any] | None] | None:
    """A stored entry's reply and usage; None for a missing or damaged one (a
    miss: a damaged entry stays until it expires or the cache is cleared)."""
    if blob is None:
        return None
    try:
        entry = json.loads(blob)
        return entry["reply"], entry["usage"]
    except (ValueError, KeyError, TypeError):
        return None


class CachingCaller:
    """A :class:`~verifleet.pipeline.ChatCaller` that answers from ``cache`` when it
    can and otherwise calls through a caller built by ``build`` (one per call, on
    a tracker of its own, so the call's usage can be stored with its reply).

    Errors of the built caller pass through and nothing is stored for them;
    errors of the cache never do (a miss, counted: see the module docstring).

    Args:
        model: The model (part of every key).
        build: Builds the real caller of ``model`` recording into a tracker.
        tracker: The unit's tracker: usage, cost and cache hits go here.
        cache: The entries.
    """

    def __init__(
        self,
        model: ModelConfig,
        build: Callable[[UsageTracker], ChatCaller],
        tracker: UsageTracker,
        cache: CallCache,
    ) -> None:
        self._model = model
        self._build = build
        self._tracker = tracker
        self._cache = cache

    @property
    def model_name(self) -> str:
        """The model's name as recorded in usage metadata."""
        return self._model.model_name

    def _sample(self, stage: str) -> int | None:
        return self._tracker.replicate if stage == ANSWER_STAGE else None

    def _store(self, what: str, action: Callable[[], T]) -> T | None:
        try:
            if isinstance(self._cache, MemoryCallCache):
                return action()  # a dict under a lock: no thread hop needed
            # A blocking store (SQLite, sync Redis) off the event loop in bridged code.
            return call_blocking(action)
        except Exception as exc:  # any store failure: see store_failed
            store_failed(what, exc)
            return None

    def _lookup(self, key: str, stage: str) -> Any:
        found = _entry(self._store("read", lambda: self._cache.get(key)))
        if found is None:
            return None
        reply, usage = found
        self._tracker.merge_stage(stage, usage or {"model": self.model_name}, cache_hit=True)
        return reply

    def _call(self, key: str, stage: str, call: Callable[[ChatCaller], Any]) -> Any:
        own = UsageTracker(pricing=self._tracker.pricing, replicate=self._tracker.replicate)
        try:
            reply = call(self._build(own))
        finally:
            # What the attempt cost counts even when it failed.
            entry = own.stage(stage)
            if entry is not None:
                self._tracker.merge_stage(stage, entry)
        if reply and not own.incomplete:
            usage = entry or {"model": self.model_name}
            blob = json.dumps({"reply": reply, "usage": usage}).encode()
            kept = self._store("write", lambda: self._cache.put(key, blob))
            if kept is not None and kept != blob:
                # Another caller stored its reply first: answer as it did.
                first = _entry(kept)
                if first is not None and type(first[0]) is type(reply):
                    return first[0]
        return reply

    def invoke(self, messages: Sequence[Message], *, stage: str) -> str:
        """As :meth:`ChatCaller.invoke`, from the cache when the same call was made.

        Raises:
            ModelCallError: a call that was not cached failed.
        """
        key = call_key(self._model, messages, sample=self._sample(stage))
        hit = self._lookup(key, stage)
        if isinstance(hit, str):
            return hit
        return str(self._call(key, stage, lambda c: c.invoke(messages, stage=stage)))

    def invoke_json(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        schema: dict[str, Any],
        schema_name: str = "response",
    ) -> dict[str, Any]:
        """As :meth:`ChatCaller.invoke_json` (its re-ask and repair included),
        from the cache when the same request was made.

        Raises:
            ModelCallError: a call that was not cached failed.
            StructuredOutputError: no valid object could be obtained (not cached).
        """
        key = call_key(
            self._model,
            messages,
            kind="json",
            schema=schema,
            schema_name=schema_name,
            sample=self._sample(stage),
        )
        hit = self._lookup(key, stage)
        if isinstance(hit, dict):
            return hit
        result: dict[str, Any] = self._call(
            key,
            stage,
            lambda c: c.invoke_json(messages, stage=stage, schema=schema, schema_name=schema_name),
        )
        return result
