"""verifleet.pipeline — the 13-stage verification pipeline, its checks and model
adapters. Imports only :mod:`verifleet.schemas`."""

# --- the model-call interface and its langchain implementation -------------------
from ._llm import (
    CallGate,
    ChatModelCache,
    LangchainChatCaller,
    UsageTracker,
    get_chat_model,
)
from ._llm_protocol import ChatCaller, Message, ModelCallError, StructuredOutputError

__all__ = [
    "CallGate",
    "ChatCaller",
    "ChatModelCache",
    "LangchainChatCaller",
    "Message",
    "ModelCallError",
    "StructuredOutputError",
    "UsageTracker",
    "get_chat_model",
]
