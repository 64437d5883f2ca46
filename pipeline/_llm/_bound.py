"""What a chat caller bound to one unit holds, whatever carries its requests: the
model, the unit's usage tracker, the client cache, the retry policy, the request
timeout, the unit deadline and the call gate (:class:`verifleet.limits.CallGate`)."""

from __future__ import annotations

import time
from collections.abc import Callable

from verifleet.limits import CallGate, no_gate
from verifleet.schemas import ModelConfig, RetryPolicy

from ._clients import ChatModelCache
from ._replies import JsonReplyCaller
from ._usage import UsageTracker

__all__ = ["BoundCaller", "CallGate", "no_gate"]


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
