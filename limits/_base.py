"""What the local and the Redis backend share: the :class:`CallGate` entry point
and the slot object the pipeline reports to."""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager

from verifleet.schemas import ModelConfig, token_count

from ._policy import EndpointLimits
from ._protocol import Slot, no_gate

__all__ = ["EndpointGate", "GateSlot"]


class GateSlot:
    """A :class:`Slot` that keeps what the caller reported, for the backend to
    read when the attempt leaves the gate."""

    __slots__ = ("call", "pause", "pushed_back", "used")

    def __init__(self, call: str = "") -> None:
        self.call = call
        self.used: int | None = None
        self.pushed_back = False
        self.pause = 0.0

    def record_usage(self, tokens: int) -> None:
        """Keep the input + output tokens the provider reported for this call,
        clamped to a finite, non-negative count (never raises)."""
        self.used = token_count(tokens)

    def record_pushback(self, retry_after: float) -> None:
        """Keep that the endpoint answered 429, asking for ``retry_after`` s."""
        self.pushed_back = True
        self.pause = max(self.pause, float(retry_after))


class EndpointGate(ABC):
    """A :class:`CallGate` that looks up the model's :class:`EndpointLimits` and
    lets a model nothing limits through untouched. Subclasses hold the limits'
    state and implement :meth:`_slot`."""

    def __call__(self, model: ModelConfig, /, *, tokens: int = 0) -> AbstractContextManager[Slot]:
        limits = EndpointLimits.of(model)
        if limits is None:
            return no_gate(model)
        return self._slot(limits, max(0, tokens))

    @abstractmethod
    def _slot(self, limits: EndpointLimits, tokens: int) -> AbstractContextManager[Slot]:
        """One call's slot at the endpoint of ``limits``, reserving ``tokens``.

        Raises:
            NoCapacityError: (on entering) no room within the gate's wait.
        """
