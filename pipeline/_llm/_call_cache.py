"""The model-call cache: a reply is reused when everything that decides it is the
same, so an identical run (or the unchanged part of a changed one) pays nothing.

A call's key hashes what its reply depends on: the model and every parameter
sent with it (name, provider, interface, endpoint, temperature, ``max_tokens``,
``extra_kwargs``, and any field added to :class:`~verifleet.schemas.ModelConfig`
later unless it is listed in :data:`NOT_IN_KEY`), the messages, the kind of call
(text, or a JSON object with its schema and schema name) and, for answer
generation, the replicate index, so replicates stay independent samples, and
an identity of the credential (an HMAC of the API key's value,
:func:`~verifleet.pipeline.credential_identity`): behind a gateway that serves
a different backend per key, two keys never share a reply; one key still does.

Only successful, complete replies are kept: an error raises before anything is
stored, and a reply cut off by a token limit or refused by a content filter
(the callers mark it, :meth:`UsageTracker.mark_incomplete`) is not stored, nor is
an empty one. A hit records the stored call's tokens under the stage with no
cost and one ``cache_hits``; the reply is the stored one.

Where the entries live is a :class:`CallCache`: one Redis for the fleet
(``verifleet.store.RedisCallCache``), a SQLite file for local runs
(:class:`~verifleet.pipeline.DiskCallCache`), anything else that implements it.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from verifleet.schemas import MODEL_FIELDS_NOT_IN_REPLY, ModelConfig

from .._bridge import call_blocking
from .._llm_protocol import ChatCaller, Message
from ._credential import credential_identity
from ._usage import UsageTracker

_log = logging.getLogger(__name__)

__all__ = ["NOT_IN_KEY", "CachingCaller", "CallCache", "call_key"]

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
    expired entry is ``None``. They may raise when their store fails (a locked
    file, Redis away): :class:`CachingCaller` then calls the model instead."""

    def get(self, key: str) -> bytes | None:
        """The entry stored under ``key`` (counted as a hit), or None (a miss)."""
        ...

    def put(self, key: str, value: bytes) -> None:
        """Store ``value`` under ``key`` (evicting the oldest entries beyond the
        size bound)."""
        ...

    def stats(self) -> dict[str, Any]:
        """Entries, bytes, hits, misses and the bounds."""
        ...

    def clear(self) -> int:
        """Remove every entry and the counters; returns how many entries went."""
        ...


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


def _unusable(what: str, exc: Exception) -> None:
    """A cache is a saving, never a verdict: a store that fails to read is a miss
    (the model is called) and one that fails to write keeps nothing. Before this,
    a locked SQLite file failed the judge call and a reward run scored a correct
    rollout 0.0."""
    _log.warning(
        "call cache %s failed (%s: %s); calling the model instead", what, type(exc).__name__, exc
    )


class CachingCaller:
    """A :class:`~verifleet.pipeline.ChatCaller` that answers from ``cache`` when it
    can and otherwise calls through a caller built by ``build`` (one per call, on
    a tracker of its own, so the call's usage can be stored with its reply).

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

    def _lookup(self, key: str, stage: str) -> Any:
        # A blocking store (SQLite, sync Redis) off the event loop in bridged code.
        try:
            blob = call_blocking(lambda: self._cache.get(key))
        except Exception as exc:  # any store failure: see _unusable
            _unusable("read", exc)
            return None
        if blob is None:
            return None
        try:
            entry = json.loads(blob)
            reply, usage = entry["reply"], entry["usage"]
        except (ValueError, KeyError, TypeError):
            return None  # a damaged entry is a miss; the fresh reply replaces it
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
            try:
                call_blocking(lambda: self._cache.put(key, blob))
            except Exception as exc:  # any store failure: see _unusable
                _unusable("write", exc)
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
