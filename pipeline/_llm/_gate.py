"""The caller's side of the :class:`~verifleet.limits.CallGate` protocol: the token
estimate a call reserves, what the endpoint said (usage, a 429 and its
``Retry-After``), and the gate's "no capacity" as a model call error."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from verifleet.limits import CallGate, NoCapacityError, Slot
from verifleet.schemas import ModelConfig, token_count

from .._llm_protocol import Message, ModelCallError
from ._retry import endpoint_pause, is_rate_limited

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


def estimate_tokens(model: ModelConfig, messages: Sequence[Message]) -> int:
    """Tokens to reserve for one call of ``model`` with ``messages``.

    The rule: the characters of the messages' contents divided by 4 (rounded up;
    about the number of tokens of English text), plus the reply's ``max_tokens``
    when the model sets it, else :data:`DEFAULT_REPLY_TOKENS`. Never fails.
    """
    chars = sum(len(str(message.get("content") or "")) for message in messages)
    return -(-chars // 4) + (model.max_tokens or DEFAULT_REPLY_TOKENS)


@contextlib.contextmanager
def gate_attempt(gate: CallGate, model: ModelConfig, tokens: int) -> Iterator[Slot]:
    """Hold ``gate`` around one attempt reserving ``tokens``; an exception of the
    attempt that is the endpoint's 429 is reported to the slot as a pushback
    (with its ``Retry-After``) before it passes through.

    Raises:
        ModelCallError: (on entering) the gate found no capacity in time
            (transient, 0 attempts: the retry loop does not retry it).
    """
    with contextlib.ExitStack() as stack:
        try:
            slot = stack.enter_context(gate(model, tokens=tokens))
        except NoCapacityError as exc:
            raise ModelCallError(str(exc), transient=True, attempts=0) from exc
        try:
            yield slot
        except Exception as exc:
            if is_rate_limited(exc):
                slot.record_pushback(endpoint_pause(exc))
            raise


def report_usage(slot: Slot, tokens: int | None) -> None:
    """Tell ``slot`` the tokens the attempt actually used; nothing when
    ``tokens`` is None (the provider reported none: the estimate stands)."""
    if tokens is not None:
        slot.record_usage(tokens)


def usage_tokens(usage: dict[str, object] | None) -> int | None:
    """Input + output tokens of a ``usage_metadata``-shaped dict (langchain's, or
    an OpenAI ``usage`` block's ``prompt_tokens``/``completion_tokens``), None when
    the provider reported none. Each count is clamped to a finite, non-negative
    integer (``token_count``): a bogus report never frees a tokens-per-minute
    budget. Never raises."""
    if not isinstance(usage, dict) or not usage:
        return None
    inputs = usage.get("input_tokens", usage.get("prompt_tokens"))
    outputs = usage.get("output_tokens", usage.get("completion_tokens"))
    return token_count(inputs) + token_count(outputs)
