"""The langchain implementation of :class:`~verifleet.pipeline.ChatCaller`."""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.utils.json import parse_json_markdown

from verifleet.schemas import ModelConfig, RetryPolicy

from .._llm_protocol import Message, ModelCallError, StructuredOutputError
from .._prompts import json_reply_instruction, json_retry_feedback
from ._clients import ChatModelCache
from ._gate import estimate_tokens, gate_attempt, report_usage, usage_tokens
from ._json import parse_strict, repair_json, schema_errors
from ._retry import call_with_retry
from ._usage import UsageTracker

__all__ = ["CallGate", "LangchainChatCaller"]

_log = logging.getLogger(__name__)

CallGate = Callable[[ModelConfig], AbstractContextManager[object]]
"""Wraps every attempt of a call to ``model``: the endpoint limiters plug in here
(the workers' Redis gate, the local runner's in-process gate).

The protocol; callers follow it through :mod:`._gate`'s helpers:

- ``gate(model)`` returns a context manager entered around one attempt (the
  request only, not the backoff sleep between attempts). Entering may block
  until the endpoint has capacity and may raise :class:`ModelCallError` when it
  gets none in time; an exception of the attempt passes through it (a gate reads
  it, e.g. to adapt to a 429).
- Token budgets, optional: a gate whose ``accepts_token_estimate`` attribute is
  ``True`` is called ``gate(model, tokens=n)`` instead (``gate_attempt``), ``n``
  being ``estimate_tokens(model, messages)``, and reserves ``n`` tokens while it
  waits and runs. If the object it yields has ``record_usage(tokens: int)``, the
  caller calls it inside the block after a successful attempt with the input +
  output tokens the provider reported (``report_usage``), and the gate replaces
  its estimate by that figure on exit. When the provider reports no usage the
  estimate stands.

Gates written for the first form alone (no ``tokens`` keyword, yielding anything)
still work unchanged: they get no estimate and no usage.
"""

_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_SCHEMA_COMPLAINTS = ("response_format", "json_schema", "schema", "structured")


def _text_of(message: Any) -> str:
    if isinstance(message, BaseMessage):
        return message.text
    return str(message)


def _no_gate(_model: ModelConfig) -> AbstractContextManager[object]:
    return contextlib.nullcontext()


def _json_schema_binding(runnable: Any) -> Any | None:
    """The chat model bound to a ``json_schema`` response format inside the chain
    ``with_structured_output(..., include_raw=True)`` returns, or None.

    That chain runs its ``raw`` step through a ``RunnableMap``, which builds a
    thread pool and starts a thread on every call: measured here it doubled the
    CPU time of a structured call (10.5 vs 5.6 ms). Calling the bound model
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


def _parse_like_langchain(text: str) -> Any:
    """What ``JsonOutputParser`` makes of a reply, None where it would fail (the
    include_raw chain then reports ``parsed=None``)."""
    try:
        return parse_json_markdown(text.strip())
    except ValueError:
        return None


class LangchainChatCaller:
    """One model bound to one unit: shared client, own usage tracker, own deadline.

    Args:
        model: The model configuration.
        tracker: Where this unit's token usage goes.
        clients: The per-process client cache.
        policy: Retry policy for transient errors.
        request_timeout: Seconds per HTTP request (part of the client cache key).
        deadline: Absolute ``time.monotonic()`` of the unit deadline, if any.
        call_gate: Context manager entered around every attempt.
        sleep: Backoff sleep; injected in tests.
    """

    def __init__(
        self,
        model: ModelConfig,
        *,
        tracker: UsageTracker,
        clients: ChatModelCache,
        policy: RetryPolicy,
        request_timeout: float,
        deadline: float | None = None,
        call_gate: CallGate | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._model = model
        self._tracker = tracker
        self._clients = clients
        self._policy = policy
        self._timeout = request_timeout
        self._deadline = deadline
        self._gate = call_gate or _no_gate
        self._sleep = sleep

    @property
    def model_name(self) -> str:
        """The model's name as recorded in usage metadata."""
        return self._model.model_name

    @property
    def tracker(self) -> UsageTracker:
        """The unit's usage tracker this caller records into."""
        return self._tracker

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
        self._tracker.record_usage(
            stage, model=self.model_name, usage=getattr(reply, "usage_metadata", None)
        )
        return _text_of(reply)

    def _ask_structured(
        self, messages: Sequence[Message], stage: str, schema: dict[str, Any], name: str
    ) -> tuple[str, dict[str, Any] | None] | None:
        """One native structured-output call, or ``None`` when unsupported."""
        if not self._clients.structured_output_supported(self._model):
            return None
        try:
            runnable = self._client().with_structured_output(
                {"name": _SCHEMA_NAME.sub("_", name) or "response", "schema": schema},
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
            text = str(exc)
            if exc.transient or not text.startswith("400 "):
                raise
            # The endpoint refused the request; when it names the schema or the
            # response format it cannot do structured output at all, so ask by
            # prompt from now on. Otherwise try the prompt for this call only.
            if any(word in text.lower() for word in _SCHEMA_COMPLAINTS):
                self._clients.disable_structured_output(self._model)
            _log.warning(
                "%s refused structured output (%s); asking by prompt", self.model_name, text
            )
            return None
        if direct is not None:
            raw, parsed = out, _parse_like_langchain(_text_of(out))
        else:
            raw = out.get("raw") if isinstance(out, dict) else out
            parsed = out.get("parsed") if isinstance(out, dict) else None
        self._tracker.record_usage(
            stage, model=self.model_name, usage=getattr(raw, "usage_metadata", None)
        )
        return _text_of(raw), parsed if isinstance(parsed, dict) else None

    def invoke_json(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        schema: dict[str, Any],
        schema_name: str = "response",
    ) -> dict[str, Any]:
        """Ask for a JSON object matching ``schema``; return it parsed.

        Native structured output where the provider has it, else the schema in
        the prompt. An unusable reply is re-asked once with the problems listed;
        then each reply is repaired (first JSON object, trailing commas) before
        giving up.

        Raises:
            ModelCallError: as :meth:`invoke`.
            StructuredOutputError: no conforming object could be obtained; the
                message lists the problems of the last reply.
        """
        replies: list[str] = []
        problems: list[str] = []
        instruction: Message = {"role": "user", "content": json_reply_instruction(schema)}
        feedback: list[Message] = []
        for _round in range(2):
            native = self._ask_structured([*messages, *feedback], stage, schema, schema_name)
            if native is None:
                raw, parsed = self.invoke([*messages, instruction, *feedback], stage=stage), None
            else:
                raw, parsed = native
            replies.append(raw)
            try:
                value = parsed if parsed is not None else parse_strict(raw)
            except ValueError as exc:
                problems = [str(exc)]
            else:
                problems = schema_errors(value, schema)
                if not problems:
                    return value
            _log.info("%s: unusable JSON from %s: %s", stage, self.model_name, problems)
            feedback = [
                {"role": "assistant", "content": raw},
                {"role": "user", "content": json_retry_feedback(problems)},
            ]
        for raw in reversed(replies):
            try:
                value = repair_json(raw)
            except ValueError:
                continue
            if not schema_errors(value, schema):
                _log.warning("%s: used a repaired JSON reply from %s", stage, self.model_name)
                return value
        raise StructuredOutputError(
            f"judge returned invalid JSON after {len(replies)} replies and repair: "
            + "; ".join(problems[:5]),
            raw=replies[-1] if replies else "",
        )
