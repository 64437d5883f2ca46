"""A direct HTTP :class:`~verifleet.pipeline.ChatCaller` for OpenAI-compatible
endpoints (``openai_endpoint`` and ``openrouter`` models).

Why: per model call, langchain and the OpenAI SDK spent most of verifleet's CPU
(the SDK's request-parameter transform above all). This caller posts the chat-completions JSON itself through
``httpx``'s transport (one per thread and endpoint, built once: see :mod:`._http`)
and reads the reply JSON itself.

It sends what :class:`~verifleet.pipeline.LangchainChatCaller` sends for the same
model: ``model``, ``messages`` (role and content as given), ``temperature``,
``max_tokens`` as ``max_completion_tokens``, ``"stream": false``, and
``response_format`` ``json_schema`` with the same schema name on structured calls;
``extra_kwargs`` become request-body fields (``extra_body`` and ``model_kwargs``
are merged into the body, as the SDK does). Everything after the request is shared
with the langchain path: retries, backoff and ``Retry-After`` (:mod:`._retry`),
error classification (429/5xx/timeouts/connection errors transient; other 4xx not,
with the endpoint's message), the call gate around each attempt (with the token
estimate and the reported usage of :mod:`._gate`), the unit deadline,
the structured-output fallback to prompting when the endpoint refuses
``response_format`` (:mod:`._replies`), and usage records.

When the langchain path is used instead (see :func:`direct_http_applies`):

* the model's ``chat_client`` is ``langchain`` (``http`` forces this path);
* with ``chat_client: auto``, ``extra_kwargs`` holds an option that configures langchain's client rather than
  the request (``default_headers``, ``organization``, ``streaming``,
  ``use_responses_api``, ``reasoning``, ...: :data:`LANGCHAIN_ONLY_OPTIONS`);
* or, with ``auto``, the model name is one langchain rewrites requests for (``o1``-style names,
  ``gpt-5``/``gpt-6``, ``codex``): it drops or sets ``temperature``, renames the
  system role or moves to the Responses API.

One difference remains by design: an ``extra_kwargs`` key the OpenAI SDK does not
know (e.g. vLLM's ``top_k``) is sent as a body field here, where the langchain path
fails the call with ``TypeError``; put it under ``extra_body`` to get the same
request from both.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from verifleet.errors import VerifleetError
from verifleet.schemas import ModelConfig, interface_kind, token_count

from .._llm_protocol import Message, ModelCallError
from ._bound import BoundCaller
from ._clients import OPENROUTER_BASE_URL, resolve_api_key
from ._gate import estimate_tokens, gate_attempt, report_usage, usage_tokens
from ._http import Transports
from ._replies import (
    parse_like_langchain,
    refused_structured_output,
    response_format_name,
)
from ._retry import call_with_retry
from ._usage import cached_input_tokens

__all__ = [
    "LANGCHAIN_ONLY_OPTIONS",
    "EndpointReplyError",
    "EndpointStatusError",
    "OpenAIHttpChatCaller",
    "direct_http_applies",
]

_log = logging.getLogger(__name__)

#: Set to ``langchain`` to send every model through langchain.

#: ChatOpenAI options that are body fields of a chat-completions request, by the
#: name langchain sends them under (its ``_default_params``; ``max_tokens`` goes
#: out as ``max_completion_tokens``). None (and an empty ``stop``) is left out.
BODY_OPTIONS = frozenset(
    {
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "max_tokens",
        "n",
        "presence_penalty",
        "prompt_cache_options",
        "reasoning_effort",
        "seed",
        "service_tier",
        "stop",
        "store",
        "temperature",
        "top_logprobs",
        "top_p",
        "verbosity",
    }
)

#: ChatOpenAI options accepted under another name (the other name wins, as there).
_ALIASES = {"max_completion_tokens": "max_tokens", "stop_sequences": "stop"}

#: ChatOpenAI options that configure its client, callbacks or the Responses API,
#: not the chat-completions body: a model using one goes through langchain.
LANGCHAIN_ONLY_OPTIONS = frozenset(
    {
        "api_key",
        "async_client",
        "base_url",
        "cache",
        "callbacks",
        "client",
        "context_management",
        "custom_get_token_ids",
        "default_headers",
        "default_query",
        "disable_streaming",
        "disabled_params",
        "http_async_client",
        "http_client",
        "http_socket_options",
        "include",
        "include_response_headers",
        "max_retries",
        "metadata",
        "model",
        "model_name",
        "name",
        "openai_api_base",
        "openai_api_key",
        "openai_organization",
        "openai_proxy",
        "organization",
        "output_version",
        "profile",
        "rate_limiter",
        "reasoning",
        "request_timeout",
        "root_async_client",
        "root_client",
        "stream_chunk_timeout",
        "stream_usage",
        "streaming",
        "tags",
        "tiktoken_model_name",
        "timeout",
        "truncation",
        "use_previous_response_id",
        "use_responses_api",
        "verbose",
    }
)

# Names langchain rewrites requests for (temperature rules of o1/gpt-5, the
# "developer" role of o-series models, the Responses API of gpt-5 pro/codex models).
_REWRITTEN_MODELS = re.compile(r"^(o\d|gpt-5|gpt-6)|codex", re.IGNORECASE)

_ROLES = {"human": "user", "ai": "assistant"}


def direct_http_applies(model: ModelConfig) -> bool:
    """Whether ``model`` goes through :class:`OpenAIHttpChatCaller` (see the module
    docstring for when it does not)."""
    if interface_kind(model.interface) != "openai_compatible":
        return False
    if model.chat_client != "auto":
        return model.chat_client == "http"
    if _REWRITTEN_MODELS.search(model.model_name):
        return False
    return LANGCHAIN_ONLY_OPTIONS.isdisjoint(model.extra_kwargs)


class EndpointStatusError(VerifleetError):
    """The endpoint answered with an error status.

    Carries what :func:`~verifleet.pipeline._llm.classify_error` reads: the status,
    the response (for ``Retry-After``) and the decoded body (for the endpoint's own
    message).
    """

    def __init__(self, response: httpx.Response, body: Any) -> None:
        super().__init__(f"HTTP {response.status_code} from {response.request.url}")
        self.status_code = response.status_code
        self.response = response
        self.body = body


class EndpointReplyError(VerifleetError):
    """A successful status whose reply is unusable (not JSON, no choices, an error
    object, or a structured reply cut off); never retried."""


_TRANSPORTS = Transports()
os.register_at_fork(after_in_child=_TRANSPORTS.forget)


@dataclass(frozen=True)
class _Endpoint:
    """One model configuration's request settings, built once per process."""

    base_url: str
    api_key: str | None
    url: str
    headers: dict[str, str]
    # Body fields before the messages (model, sampling options) and after them
    # (extra_body, which the SDK merges last so that it wins).
    head: dict[str, Any]
    tail: dict[str, Any]

    @classmethod
    def build(cls, model: ModelConfig) -> _Endpoint:
        """Raises: ModelCallError: the API key's variable is unset (non-transient)."""
        api_key = resolve_api_key(model)
        base_url = (model.endpoint_base_url or OPENROUTER_BASE_URL).rstrip("/")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key is not None:
            headers["Authorization"] = f"Bearer {api_key}"
        options: dict[str, Any] = {"temperature": model.temperature}
        if model.max_tokens is not None:
            options["max_tokens"] = model.max_tokens
        options.update(model.extra_kwargs)
        for alias, name in _ALIASES.items():
            if alias in options:
                options[name] = options.pop(alias)
        extra_body = options.pop("extra_body", None) or {}
        model_kwargs = options.pop("model_kwargs", None) or {}
        head: dict[str, Any] = {"model": model.model_name}
        for name, value in options.items():
            if value is None or (name == "stop" and not value):
                continue
            head["max_completion_tokens" if name == "max_tokens" else name] = value
        head.update(model_kwargs)
        return cls(
            base_url=base_url,
            api_key=api_key,
            url=f"{base_url}/chat/completions",
            headers=headers,
            head=head,
            tail=dict(extra_body),
        )

    def body(self, messages: Sequence[Message], response_format: dict[str, Any] | None) -> bytes:
        """The request JSON, with ``response_format`` on structured calls."""
        payload = dict(self.head)
        payload["stream"] = False
        if response_format is not None:
            payload["response_format"] = response_format
        payload["messages"] = [_message(m) for m in messages]
        payload.update(self.tail)
        return json.dumps(payload, ensure_ascii=False).encode()


def _message(message: Message) -> dict[str, str]:
    role = message.get("role", "user")
    out = {"role": _ROLES.get(role, role), "content": message.get("content", "")}
    if message.get("name"):
        out["name"] = message["name"]
    return out


def _decode(response: httpx.Response) -> Any:
    try:
        return json.loads(response.content)
    except ValueError:
        return response.text


def _reply(response: httpx.Response, *, structured: bool) -> tuple[str, dict[str, Any] | None]:
    """The reply text and the usage block of a completed request.

    Raises:
        EndpointStatusError: the status is not 2xx.
        EndpointReplyError: the reply is not a chat completion, or a structured
            reply stopped at the token limit or a content filter.
    """
    data = _decode(response)
    if not response.is_success:
        raise EndpointStatusError(response, data)
    if not isinstance(data, dict):
        raise EndpointReplyError(f"the endpoint's reply is not a JSON object: {str(data)[:200]!r}")
    if data.get("error"):
        raise EndpointReplyError(f"the endpoint replied with an error: {data['error']}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise EndpointReplyError(f"the endpoint's reply has no choices (keys: {sorted(data)})")
    if structured:
        for choice in choices:
            reason = choice.get("finish_reason") if isinstance(choice, dict) else None
            if reason in ("length", "content_filter"):
                raise EndpointReplyError(
                    f"the structured reply was cut off (finish_reason {reason!r}; "
                    f"usage {data.get('usage')})"
                )
    first = choices[0] if isinstance(choices[0], dict) else {}
    message = first.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    usage = data.get("usage")
    text = content if isinstance(content, str) else ""
    usage = dict(usage) if isinstance(usage, dict) else None
    refused = isinstance(message, dict) and bool(message.get("refusal"))
    if refused or first.get("finish_reason") in ("length", "content_filter"):
        # Kept out of the call cache (the caller reads this mark), never cached.
        usage = {**(usage or {}), _INCOMPLETE: True}
    return text, usage


#: Marks a usage block whose reply was cut off or refused.
_INCOMPLETE = "verifleet_incomplete"


def _usage_metadata(usage: dict[str, Any] | None) -> dict[str, Any] | None:
    """The OpenAI ``usage`` block as langchain's ``usage_metadata`` counts."""
    if not usage:
        return None
    # The endpoint's counts are clamped (finite, >= 0): they price the call.
    inputs = token_count(usage.get("prompt_tokens"))
    outputs = token_count(usage.get("completion_tokens"))
    total = usage.get("total_tokens")
    out: dict[str, Any] = {
        "input_tokens": inputs,
        "output_tokens": outputs,
        "total_tokens": token_count(total) if total is not None else inputs + outputs,
    }
    cached = cached_input_tokens(usage)
    if cached:
        out["input_token_details"] = {"cache_read": cached}
    return out


class OpenAIHttpChatCaller(BoundCaller):
    """One OpenAI-compatible model (``openai_endpoint`` or ``openrouter``) bound to
    one unit, over plain HTTP. Arguments and behaviour: those of
    :class:`~verifleet.pipeline.LangchainChatCaller` (``request_timeout`` applies
    to connect, write and each read)."""

    def _post(
        self,
        messages: Sequence[Message],
        stage: str,
        response_format: dict[str, Any] | None = None,
    ) -> str:
        """One call with retries; records usage; returns the reply text.

        Raises:
            ModelCallError: retries exhausted, a non-transient error, a missing
                API key, or the unit deadline.
        """
        endpoint = self._clients.direct(
            self._model,
            request_timeout=self._timeout,
            build=lambda: _Endpoint.build(self._model),
        )
        content = endpoint.body(messages, response_format)
        structured = response_format is not None

        tokens = estimate_tokens(self._model, messages)

        def attempt() -> tuple[str, dict[str, Any] | None]:
            sender = _TRANSPORTS.get(
                endpoint.base_url, endpoint.api_key, max_concurrency=self._model.max_concurrency
            )
            with gate_attempt(self._gate, self._model, tokens) as slot:
                response = sender.post(
                    endpoint.url, content=content, headers=endpoint.headers, timeout=self._timeout
                )
                # Read inside the gate: an error status passes through it (a gate
                # adapts to 429s) and the reported usage settles a token budget.
                text, usage = _reply(response, structured=structured)
                report_usage(slot, usage_tokens(usage))
            return text, usage

        text, usage = call_with_retry(
            attempt,
            policy=self._policy,
            deadline=self._deadline,
            sleep=self._sleep,
            label=f"{stage} ({self._model.model_name})",
        )
        if usage is not None and usage.get(_INCOMPLETE):
            self._tracker.mark_incomplete()
        self._tracker.record_usage(stage, model=self.model_name, usage=_usage_metadata(usage))
        return text

    def invoke(self, messages: Sequence[Message], *, stage: str) -> str:
        """Send ``messages``; return the reply text; record usage under ``stage``.

        Raises:
            ModelCallError: retries exhausted, a non-transient error (the
                endpoint's message included), a missing API key, or the unit
                deadline.
        """
        return self._post(messages, stage)

    def _ask_structured(
        self, messages: Sequence[Message], stage: str, schema: dict[str, Any], name: str
    ) -> tuple[str, dict[str, Any] | None] | None:
        """One ``json_schema`` call, or None when the endpoint cannot do it."""
        if not self._clients.structured_output_supported(self._model):
            return None
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": response_format_name(name), "schema": schema},
        }
        try:
            text = self._post(messages, stage, response_format)
        except ModelCallError as exc:
            if refused_structured_output(exc, self._clients, self._model):
                return None
            raise
        parsed = parse_like_langchain(text)
        return text, parsed if isinstance(parsed, dict) else None
