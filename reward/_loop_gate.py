"""The fleet's endpoint limits for judge calls made on an event loop.

``verifleet serve --workers N --redis URL`` runs N processes, each scoring on
its own event loop. For their judge calls to share one concurrency window,
requests-per-minute and tokens-per-minute budget and ``Retry-After`` pause per
endpoint — with each other, and with ``verifleet run --redis`` and the fleet's
workers on the same Redis — they go through the fleet's own gate
(:class:`~verifleet.limits.RedisCallGate`). That gate is synchronous: taking a
slot may wait (a blocking pop on Redis) until another process frees one. On the
loop that would stop every other request, so :class:`LoopSafeGate` takes the slot
in a worker thread when called from bridged code; giving it back is one short
Redis script and runs on the loop.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager

from verifleet.limits import CallGate, Slot
from verifleet.pipeline import call_blocking, in_bridge
from verifleet.schemas import ModelConfig

__all__ = ["LoopSafeGate"]


class LoopSafeGate:
    """A :class:`~verifleet.limits.CallGate` wrapping a blocking one so that
    bridged code (:func:`~verifleet.pipeline.run_bridged`) waits for a slot
    without blocking its event loop; outside a bridge it is the wrapped gate.

    Args:
        inner: The blocking gate (the fleet's :class:`~verifleet.limits.RedisCallGate`).

    Raises (on entering): what the wrapped gate raises
    (:class:`~verifleet.limits.NoCapacityError` after its ``max_wait``, Redis
    errors). A call cancelled while it waits for its slot gives the slot back
    if it got one, so no lease is left to expire.
    """

    def __init__(self, inner: CallGate) -> None:
        self.inner = inner

    def __call__(self, model: ModelConfig, /, *, tokens: int = 0) -> AbstractContextManager[Slot]:
        if not in_bridge():
            return self.inner(model, tokens=tokens)
        return self._bridged(model, tokens)

    @contextlib.contextmanager
    def _bridged(self, model: ModelConfig, tokens: int) -> Iterator[Slot]:
        held = self.inner(model, tokens=tokens)
        entered: list[Slot] = []

        def enter() -> Slot:
            slot = held.__enter__()
            entered.append(slot)
            return slot

        try:
            slot = call_blocking(enter)
        except BaseException:
            # Cancelled while the thread took the slot: it has it now.
            if entered:
                held.__exit__(*sys.exc_info())
            raise
        try:
            yield slot
        except BaseException:
            if not held.__exit__(*sys.exc_info()):
                raise
        else:
            held.__exit__(None, None, None)
