"""The call gate: what the pipeline enters around every model call attempt.

The pipeline depends on these two protocols only; which backend stands behind
them (one process, or the fleet's Redis) is chosen by whoever builds the
pipeline's resources: the local runner, a worker process, the reward server.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

from verifleet.schemas import ModelConfig, VerifleetError

__all__ = ["CallGate", "NoCapacityError", "Slot", "no_gate"]


class NoCapacityError(VerifleetError):
    """A call waited longer than the gate's ``max_wait`` for room at its endpoint
    (concurrency window, requests or tokens per minute, or a ``Retry-After``
    pause). The pipeline records it as the call's error; the unit goes on."""


@runtime_checkable
class Slot(Protocol):
    """One attempt's place at its endpoint, yielded by a :class:`CallGate`.

    The caller tells the slot what the endpoint said; the gate reads it when the
    attempt leaves the gate. Both methods are called at most once, inside the
    ``with`` block, and never raise.
    """

    def record_usage(self, tokens: int) -> None:
        """The input + output tokens the provider reported for this attempt
        (replaces the attempt's token estimate in a ``tokens_per_minute``
        budget)."""

    def record_pushback(self, retry_after: float) -> None:
        """The endpoint refused this attempt as too many (HTTP 429): the
        adaptive window shrinks, and ``retry_after`` seconds (0: none said)
        pause every caller of the endpoint."""


class CallGate(Protocol):
    """Entered around one attempt of a model call (the request only, never the
    backoff sleep between attempts).

    ``gate(model, tokens=n)`` returns a context manager that, on entering, waits
    until ``model``'s endpoint has room for one more call reserving ``n``
    tokens, and yields the attempt's :class:`Slot`. Leaving it frees the room;
    an attempt that leaves without an exception counts as a success (its
    latency feeds the adaptive window), one that leaves with an exception
    neither grows nor shrinks the window unless the caller reported a
    pushback.

    Entering raises :class:`NoCapacityError` when no room came within the
    gate's ``max_wait``; backends with shared state (Redis) may raise their
    store's errors when it is unreachable.
    """

    def __call__(
        self, model: ModelConfig, /, *, tokens: int = 0
    ) -> AbstractContextManager[Slot]: ...


class _FreeSlot:
    """The slot of an ungated attempt: nothing to record."""

    __slots__ = ()

    def record_usage(self, tokens: int) -> None:
        """Ignored: no budget to settle."""

    def record_pushback(self, retry_after: float) -> None:
        """Ignored: no window to shrink."""


_FREE = _FreeSlot()


@contextlib.contextmanager
def _free() -> Iterator[Slot]:
    yield _FREE


def no_gate(_model: ModelConfig, /, *, tokens: int = 0) -> AbstractContextManager[Slot]:
    """The gate of a caller given none: lets every attempt through at once."""
    return _free()
