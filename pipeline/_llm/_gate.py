"""The caller's side of the :data:`~verifleet.pipeline.CallGate` protocol: the token
estimate a call reserves, and the usage it reports back (see the ``CallGate``
docstring in :mod:`._bound` for the protocol itself)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, cast

from verifleet.schemas import ModelConfig

from .._llm_protocol import Message

if TYPE_CHECKING:
    from ._bound import CallGate

__all__ = [
    "DEFAULT_REPLY_TOKENS",
    "estimate_tokens",
    "gate_attempt",
    "report_usage",
    "usage_tokens",
]

#: Reply tokens a call is assumed to produce when its model sets no ``max_tokens``
#: (the estimate is replaced by the reported usage after the call).
DEFAULT_REPLY_TOKENS = 256


class _TokenGate(Protocol):
    """A ``CallGate`` that takes a token estimate."""

    def __call__(
        self, model: ModelConfig, /, *, tokens: int | None = None
    ) -> AbstractContextManager[object]: ...


def estimate_tokens(model: ModelConfig, messages: Sequence[Message]) -> int:
    """Tokens to reserve for one call of ``model`` with ``messages``.

    The rule: the characters of the messages' contents divided by 4 (rounded up;
    about the number of tokens of English text), plus the reply's ``max_tokens``
    when the model sets it, else :data:`DEFAULT_REPLY_TOKENS`. Never fails.
    """
    chars = sum(len(str(message.get("content") or "")) for message in messages)
    return -(-chars // 4) + (model.max_tokens or DEFAULT_REPLY_TOKENS)


def gate_attempt(gate: CallGate, model: ModelConfig, tokens: int) -> AbstractContextManager[object]:
    """Open ``gate`` for one attempt, with the token estimate when it takes one
    (its ``accepts_token_estimate`` is True).

    Raises:
        ModelCallError: (on entering) the gate found no capacity in time.
    """
    if getattr(gate, "accepts_token_estimate", False) is True:
        return cast(_TokenGate, gate)(model, tokens=tokens)
    return gate(model)


def report_usage(slot: object, tokens: int | None) -> None:
    """Tell the gate's ``slot`` the tokens the attempt actually used: a no-op for a
    gate that does not count tokens, or when ``tokens`` is None (unknown)."""
    record = getattr(slot, "record_usage", None)
    if tokens is not None and callable(record):
        record(tokens)


def usage_tokens(usage: dict[str, Any] | None) -> int | None:
    """Input + output tokens of a ``usage_metadata``-shaped dict (langchain's, or
    an OpenAI ``usage`` block's ``prompt_tokens``/``completion_tokens``), None when
    the provider reported none."""
    if not usage:
        return None
    inputs = usage.get("input_tokens", usage.get("prompt_tokens")) or 0
    outputs = usage.get("output_tokens", usage.get("completion_tokens")) or 0
    return int(inputs) + int(outputs)
