"""Which :class:`~verifleet.pipeline.ChatCaller` implementation serves a model."""

from __future__ import annotations

import time
from collections.abc import Callable

from verifleet.schemas import ModelConfig, RetryPolicy

from ._bound import CallGate
from ._caller import LangchainChatCaller
from ._clients import ChatModelCache
from ._openai_http import OpenAIHttpChatCaller, direct_http_applies
from ._usage import UsageTracker

__all__ = ["make_chat_caller"]


def make_chat_caller(
    model: ModelConfig,
    *,
    tracker: UsageTracker,
    clients: ChatModelCache,
    policy: RetryPolicy,
    request_timeout: float,
    deadline: float | None = None,
    call_gate: CallGate | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> OpenAIHttpChatCaller | LangchainChatCaller:
    """The caller for ``model``: the direct HTTP one for OpenAI-compatible endpoints
    (unless ``VERIFLEET_CHAT_CLIENT=langchain`` or the model needs langchain, see
    :func:`~verifleet.pipeline._llm.direct_http_applies`), langchain otherwise.

    Arguments are those of :class:`~verifleet.pipeline.LangchainChatCaller`.
    Building a caller never fails; a missing API key or provider package surfaces
    as :class:`~verifleet.pipeline.ModelCallError` from the first call.
    """
    kind = OpenAIHttpChatCaller if direct_http_applies(model) else LangchainChatCaller
    return kind(
        model,
        tracker=tracker,
        clients=clients,
        policy=policy,
        request_timeout=request_timeout,
        deadline=deadline,
        call_gate=call_gate,
        sleep=sleep,
    )
