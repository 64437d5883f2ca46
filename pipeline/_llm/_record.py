"""Recording every model call of a result: the messages sent and the raw reply.

:class:`RecordingCaller` wraps the caller a stage gets (outside the call cache,
so a cached reply is recorded as one) and appends a
:class:`~verifleet.schemas.ModelCall` to the unit's :class:`CallLog` for each
``invoke`` / ``invoke_json``, failed calls included. FinalizeResult puts the log
into ``template.model_calls``, bounded by ``ResultLimits.calls``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from verifleet.errors import StructuredOutputError
from verifleet.schemas import ModelCall

from .._llm_protocol import ChatCaller, Message

if TYPE_CHECKING:
    from ._usage import UsageTracker

__all__ = ["CallLog", "RecordingCaller"]


class CallLog:
    """The model calls of one result, in the order they finished. Thread-safe
    (a check may fan out its calls)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[ModelCall] = []

    def add(self, call: ModelCall) -> None:
        """Append one call."""
        with self._lock:
            self._calls.append(call)

    def extend(self, calls: Sequence[ModelCall]) -> None:
        """Append calls recorded elsewhere (an answer shared by a unit's judges)."""
        with self._lock:
            self._calls.extend(calls)

    def take(self, stage: str) -> list[ModelCall]:
        """Remove and return the calls of ``stage``."""
        with self._lock:
            taken = [c for c in self._calls if c.stage == stage]
            self._calls = [c for c in self._calls if c.stage != stage]
            return taken

    def calls(self) -> list[ModelCall]:
        """A copy of every call recorded."""
        with self._lock:
            return list(self._calls)


def _hits(tracker: UsageTracker, stage: str) -> int:
    entry = tracker.stage(stage)
    return int(entry.get("cache_hits") or 0) if entry else 0


class RecordingCaller:
    """A :class:`~verifleet.pipeline.ChatCaller` that records each call of
    ``inner`` into ``tracker.calls`` and otherwise behaves exactly as ``inner``
    (same replies, same exceptions).

    Args:
        inner: The caller that makes the calls.
        tracker: The unit's tracker: its :attr:`UsageTracker.calls` gets the
            records, its cache-hit counts tell a cached reply.
    """

    def __init__(self, inner: ChatCaller, tracker: UsageTracker) -> None:
        self._inner = inner
        self._tracker = tracker

    @property
    def model_name(self) -> str:
        """The model's name as recorded in usage metadata."""
        return self._inner.model_name

    @property
    def inner(self) -> ChatCaller:
        """The caller that makes the calls."""
        return self._inner

    def _record(
        self,
        stage: str,
        kind: str,
        messages: Sequence[Message],
        hits: int,
        reply: str | None,
        error: str | None = None,
    ) -> None:
        self._tracker.calls.add(
            ModelCall(
                stage=stage,
                model=self.model_name,
                kind=kind,
                messages=[{"role": m["role"], "content": str(m["content"])} for m in messages],
                reply=reply,
                error=error,
                cached=_hits(self._tracker, stage) > hits,
            )
        )

    def invoke(self, messages: Sequence[Message], *, stage: str) -> str:
        """As :meth:`ChatCaller.invoke`, recorded.

        Raises:
            ModelCallError: as ``inner`` (recorded with its message first).
        """
        hits = _hits(self._tracker, stage)
        try:
            reply = self._inner.invoke(messages, stage=stage)
        except Exception as exc:
            self._record(stage, "text", messages, hits, None, str(exc) or type(exc).__name__)
            raise
        self._record(stage, "text", messages, hits, reply)
        return reply

    def invoke_json(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        schema: dict[str, Any],
        schema_name: str = "response",
    ) -> dict[str, Any]:
        """As :meth:`ChatCaller.invoke_json`, recorded: the reply is the object
        obtained as JSON text, or on failure the model's last raw text.

        Raises:
            ModelCallError, StructuredOutputError: as ``inner`` (recorded first).
        """
        hits = _hits(self._tracker, stage)
        try:
            value = self._inner.invoke_json(
                messages, stage=stage, schema=schema, schema_name=schema_name
            )
        except StructuredOutputError as exc:
            self._record(stage, "json", messages, hits, exc.raw, str(exc))
            raise
        except Exception as exc:
            self._record(stage, "json", messages, hits, None, str(exc) or type(exc).__name__)
            raise
        self._record(
            stage, "json", messages, hits, json.dumps(value, ensure_ascii=False, default=str)
        )
        return value
