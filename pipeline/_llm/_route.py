"""Model interfaces registered by name, and the caller each one builds.

``ModelConfig.interface`` names an interface of the registry in
``verifleet.schemas`` (:func:`~verifleet.schemas.interface_names`), which says how
its models are called (:data:`~verifleet.schemas.InterfaceKind`); here each kind
has its caller factory, and :func:`register_interface` adds a name with a factory
of its own. The built-in interfaces:
``langchain`` (any provider langchain's ``init_chat_model`` knows),
``openai_endpoint`` and ``openrouter`` (verifleet's direct HTTP client, or
langchain's ``ChatOpenAI`` when ``ModelConfig.chat_client`` says so or the model
needs it; see :func:`~verifleet.pipeline._llm.direct_http_applies`) and ``manual``
(recorded answers: it answers, but cannot judge). Other interfaces plug in with
:func:`register_interface` before the run starts, in every process that runs
units (the local runner's, each worker's).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from verifleet.schemas import (
    InterfaceKind,
    ModelConfig,
    RetryPolicy,
    declare_interface,
    interface_kind,
    interface_names,
)

from .._llm_protocol import ChatCaller
from ._bound import CallGate
from ._clients import ChatModelCache
from ._openai_http import OpenAIHttpChatCaller, direct_http_applies
from ._usage import UsageTracker

__all__ = [
    "CallerOptions",
    "InterfaceFactory",
    "make_chat_caller",
    "register_interface",
    "registered_interfaces",
]


@dataclass(frozen=True)
class CallerOptions:
    """What a caller is bound to besides its model: one unit's usage tracker and
    deadline, and the process's client cache, retry policy, timeout and gate."""

    tracker: UsageTracker
    clients: ChatModelCache
    policy: RetryPolicy
    request_timeout: float
    deadline: float | None = None
    call_gate: CallGate | None = None
    sleep: Callable[[float], None] = time.sleep


InterfaceFactory = Callable[[ModelConfig, CallerOptions], ChatCaller]
"""Builds the caller of one model for one unit. Must not raise: a model that
cannot be called (missing key, unknown provider) fails its first call with
:class:`~verifleet.pipeline.ModelCallError`, so the unit records the error."""


def _langchain(model: ModelConfig, options: CallerOptions) -> ChatCaller:
    # langchain is imported by the first model that needs it, not by every run.
    from ._caller import LangchainChatCaller

    return LangchainChatCaller(model, **vars(options))


def _openai_compatible(model: ModelConfig, options: CallerOptions) -> ChatCaller:
    if direct_http_applies(model):
        return OpenAIHttpChatCaller(model, **vars(options))
    return _langchain(model, options)


#: The caller factory of each kind of interface (every kind but ``registered``,
#: whose names bring their own factory).
FACTORIES: dict[InterfaceKind, InterfaceFactory] = {
    "langchain": _langchain,
    "openai_compatible": _openai_compatible,
    # Recorded answers have no chat client: as a judge, langchain's builder
    # reports "interface 'manual' has no chat client" at the first call.
    "recorded": _langchain,
}
_REGISTERED: dict[str, InterfaceFactory] = {}
_LOCK = threading.Lock()


def register_interface(name: str, factory: InterfaceFactory, *, replace: bool = False) -> None:
    """Make ``ModelConfig(interface=name)`` call models through ``factory``.

    Args:
        name: The interface name models will use.
        factory: Builds a :class:`~verifleet.pipeline.ChatCaller` per model and unit.
        replace: Allow replacing an existing entry (a built-in included).

    Raises:
        ValueError: ``name`` is empty, or already registered and ``replace`` is False.
    """
    # Registered in every process that loads such models (the CLI's, each worker's):
    # ModelConfig refuses interface names nobody declared.
    if not name.strip():
        raise ValueError("an interface needs a name")
    with _LOCK:
        if not replace and (name in _REGISTERED or interface_kind(name) is not None):
            raise ValueError(f"interface '{name}' is already registered (pass replace=True)")
        _REGISTERED[name] = factory
        declare_interface(name)


def registered_interfaces() -> list[str]:
    """The names :func:`make_chat_caller` knows, sorted: the schemas' registry."""
    return interface_names()


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
) -> ChatCaller:
    """The caller for ``model``, built by its interface's registered factory.

    Arguments are those of :class:`~verifleet.pipeline.LangchainChatCaller`.
    Building a caller never fails; a missing API key, provider package or an
    interface nobody registered surfaces as
    :class:`~verifleet.pipeline.ModelCallError` from the first call.
    """
    with _LOCK:
        factory = _REGISTERED.get(model.interface)
    if factory is None:
        factory = FACTORIES.get(interface_kind(model.interface) or "langchain", _langchain)
    options = CallerOptions(tracker, clients, policy, request_timeout, deadline, call_gate, sleep)
    return factory(model, options)
