"""What a chat caller bound to one unit holds, whatever carries its requests: the
model, the unit's usage tracker, the client cache, the retry policy, the request
timeout, the unit deadline and the call gate; and the :data:`CallGate` protocol."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

from verifleet.schemas import ModelConfig, RetryPolicy

from ._clients import ChatModelCache
from ._replies import JsonReplyCaller
from ._usage import UsageTracker

__all__ = ["BoundCaller", "CallGate", "no_gate"]

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


def no_gate(_model: ModelConfig) -> AbstractContextManager[object]:
    """The gate of a caller given none: lets every attempt through."""
    return contextlib.nullcontext()


class BoundCaller(JsonReplyCaller):
    """A :class:`JsonReplyCaller` bound to one model and one unit.

    Args:
        model: The model configuration.
        tracker: Where this unit's token usage goes.
        clients: The per-process client cache (clients or request settings per
            configuration, and the models whose endpoint refused structured output).
        policy: Retry policy for transient errors.
        request_timeout: Seconds per HTTP request.
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
        self._gate = call_gate or no_gate
        self._sleep = sleep

    @property
    def model_name(self) -> str:
        """The model's name as recorded in usage metadata."""
        return self._model.model_name

    @property
    def tracker(self) -> UsageTracker:
        """The unit's usage tracker this caller records into."""
        return self._tracker
