"""The langchain implementation of :class:`~verifleet.pipeline.ChatCaller`.

Every interface can go through it; ``openai_endpoint`` and ``openrouter`` models
go through :class:`~verifleet.pipeline._llm.OpenAIHttpChatCaller` by default
instead (see :func:`~verifleet.pipeline._llm.make_chat_caller`), which sends the
same requests without langchain and the OpenAI SDK.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from .._llm_protocol import Message, ModelCallError
from ._bound import BoundCaller
from ._gate import estimate_tokens, gate_attempt, report_usage, usage_tokens
from ._replies import (
    parse_like_langchain,
    refused_structured_output,
    response_format_name,
)
from ._retry import call_with_retry

__all__ = ["LangchainChatCaller"]

_log = logging.getLogger(__name__)


def _text_of(message: Any) -> str:
    if isinstance(message, BaseMessage):
        return message.text
    return str(message)


def _json_schema_binding(runnable: Any) -> Any | None:
    """The chat model bound to a ``json_schema`` response format inside the chain
    ``with_structured_output(..., include_raw=True)`` returns, or None.

    That chain runs its ``raw`` step through a ``RunnableMap``, which builds a
    thread pool and starts a thread on every call. Calling the bound model
    directly and parsing as langchain's ``JsonOutputParser`` would gives the same
    result without it. Any other shape (function calling, a provider's own
    structured output) returns None and runs the chain as built.
    """
    steps = getattr(getattr(runnable, "first", None), "steps__", None)
    if not isinstance(steps, dict) or set(steps) != {"raw"}:
        return None
    bound = steps["raw"]
    response_format = getattr(bound, "kwargs", {}).get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        return bound
    return None


class LangchainChatCaller(BoundCaller):
    """One model bound to one unit through langchain: shared client, own usage
    tracker, own deadline. Arguments: those of :class:`BoundCaller`
    (``request_timeout`` is part of the client cache key)."""

    def _client(self) -> BaseChatModel:
        return self._clients.get(self._model, request_timeout=self._timeout)

    def _run(self, runnable: Any, messages: Sequence[Message], label: str) -> Any:
        tokens = estimate_tokens(self._model, messages)

        def attempt() -> Any:
            with gate_attempt(self._gate, self._model, tokens) as slot:
                reply = runnable.invoke(list(messages))
                # an include_raw chain answers {"raw": message, "parsed": ...}
                raw = reply.get("raw") if isinstance(reply, dict) else reply
                report_usage(slot, usage_tokens(getattr(raw, "usage_metadata", None)))
                return reply

        return call_with_retry(
            attempt,
            policy=self._policy,
            deadline=self._deadline,
            sleep=self._sleep,
            label=f"{label} ({self._model.model_name})",
        )

    def invoke(self, messages: Sequence[Message], *, stage: str) -> str:
        """Send ``messages``; return the reply text; record usage under ``stage``.

        Raises:
            ModelCallError: retries exhausted, a non-transient error, a missing
                API key, or the unit deadline.
        """
        reply = self._run(self._client(), messages, stage)
        self._note_incomplete(reply)
        self._tracker.record_usage(
            stage, model=self.model_name, usage=getattr(reply, "usage_metadata", None)
        )
        return _text_of(reply)

    def _note_incomplete(self, reply: Any) -> None:
        # A reply cut off or refused is never kept by the call cache.
        meta = getattr(reply, "response_metadata", None) or {}
        reason = meta.get("finish_reason") or meta.get("stop_reason")
        refusal = (getattr(reply, "additional_kwargs", None) or {}).get("refusal")
        if refusal or reason in ("length", "max_tokens", "content_filter", "refusal"):
            self._tracker.mark_incomplete()

    def _ask_structured(
        self, messages: Sequence[Message], stage: str, schema: dict[str, Any], name: str
    ) -> tuple[str, dict[str, Any] | None] | None:
        """One native structured-output call, or ``None`` when unsupported."""
        if not self._clients.structured_output_supported(self._model):
            return None
        try:
            runnable = self._client().with_structured_output(
                {"name": response_format_name(name), "schema": schema},
                method="json_schema",
                include_raw=True,
            )
        except (NotImplementedError, ValueError, TypeError) as exc:
            _log.info("no native structured output for %s: %s", self.model_name, exc)
            self._clients.disable_structured_output(self._model)
            return None
        direct = _json_schema_binding(runnable)
        try:
            out = self._run(direct or runnable, messages, stage)
        except ModelCallError as exc:
            if refused_structured_output(exc, self._clients, self._model):
                return None
            raise
        if direct is not None:
            raw, parsed = out, parse_like_langchain(_text_of(out))
        else:
            raw = out.get("raw") if isinstance(out, dict) else out
            parsed = out.get("parsed") if isinstance(out, dict) else None
        self._note_incomplete(raw)
        self._tracker.record_usage(
            stage, model=self.model_name, usage=getattr(raw, "usage_metadata", None)
        )
        return _text_of(raw), parsed if isinstance(parsed, dict) else None
