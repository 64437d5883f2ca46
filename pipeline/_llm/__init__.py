"""The model-call layer behind :class:`~verifleet.pipeline.ChatCaller`: cached
clients, retries with backoff, JSON replies, usage accounting.

Two implementations share all of it: :class:`LangchainChatCaller` (every
interface) and :class:`OpenAIHttpChatCaller` (OpenAI-compatible endpoints over
plain HTTP, the default for ``openai_endpoint`` and ``openrouter`` models;
``ModelConfig.chat_client`` chooses). Model interfaces are registered by name
(:func:`register_interface`); :func:`make_chat_caller` asks the model's interface
for its caller.
"""

from __future__ import annotations

import typing

from verifleet import _lazy

if typing.TYPE_CHECKING:
    from ._async_http import close_async_senders
    from ._bound import CallGate
    from ._call_cache import (
        NOT_IN_KEY,
        CachingCaller,
        CallCache,
        MemoryCallCache,
        call_cache_failures,
        call_key,
    )
    from ._caller import LangchainChatCaller
    from ._record import CallLog, RecordingCaller
    from ._disk_cache import DiskCallCache, default_cache_dir
    from ._clients import ChatModelCache, get_chat_model, resolve_api_key
    from ._credential import CACHE_KEY_SECRET_ENV, credential_identity
    from ._json import first_object, parse_strict, repair_json, schema_errors
    from ._openai_http import (
        EndpointReplyError,
        EndpointStatusError,
        OpenAIHttpChatCaller,
        direct_http_applies,
    )
    from ._retry import (
        MAX_ENDPOINT_PAUSE,
        ErrorInfo,
        call_with_retry,
        classify_error,
        endpoint_pause,
    )
    from ._route import (
        CallerOptions,
        InterfaceFactory,
        make_chat_caller,
        register_interface,
        registered_interfaces,
    )
    from ._usage import UsageTracker

__all__ = [
    "CACHE_KEY_SECRET_ENV",
    "MAX_ENDPOINT_PAUSE",
    "NOT_IN_KEY",
    "CachingCaller",
    "CallCache",
    "CallGate",
    "CallLog",
    "CallerOptions",
    "ChatModelCache",
    "DiskCallCache",
    "EndpointReplyError",
    "EndpointStatusError",
    "ErrorInfo",
    "InterfaceFactory",
    "LangchainChatCaller",
    "MemoryCallCache",
    "OpenAIHttpChatCaller",
    "RecordingCaller",
    "UsageTracker",
    "call_cache_failures",
    "call_key",
    "call_with_retry",
    "classify_error",
    "close_async_senders",
    "credential_identity",
    "default_cache_dir",
    "direct_http_applies",
    "endpoint_pause",
    "first_object",
    "get_chat_model",
    "make_chat_caller",
    "parse_strict",
    "register_interface",
    "registered_interfaces",
    "repair_json",
    "resolve_api_key",
    "schema_errors",
]


# Each name of __all__ loads on first use, from the module the TYPE_CHECKING block
# imports it from: a process that calls one OpenAI-compatible endpoint over HTTP never
# imports langchain, openai or aiohttp.
__getattr__, __dir__ = _lazy.exports(__name__)
