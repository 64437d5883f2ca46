"""The langchain side of :class:`~verifleet.pipeline.ChatCaller`: cached clients,
retries with backoff, JSON replies, usage accounting."""

from ._caller import CallGate, LangchainChatCaller
from ._clients import ChatModelCache, get_chat_model, resolve_api_key
from ._json import parse_strict, repair_json, schema_errors
from ._retry import ErrorInfo, call_with_retry, classify_error
from ._usage import UsageTracker

__all__ = [
    "CallGate",
    "ChatModelCache",
    "ErrorInfo",
    "LangchainChatCaller",
    "UsageTracker",
    "call_with_retry",
    "classify_error",
    "get_chat_model",
    "parse_strict",
    "repair_json",
    "resolve_api_key",
    "schema_errors",
]
