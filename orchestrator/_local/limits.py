"""Endpoint limits in local mode: the same caps and adaptation as the fleet's Redis
gate, held in this process."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from verifleet.orchestrator.store import EndpointLimits, is_rate_limited
from verifleet.pipeline import ModelCallError
from verifleet.schemas import ModelConfig

__all__ = ["LocalCallGate"]


@dataclass
class _Endpoint:
    limits: EndpointLimits
    cap: float
    in_flight: int = 0
    shrunk_at: float = float("-inf")
    starts: deque[float] = field(default_factory=deque)


class LocalCallGate:
    """A ``CallGate`` for one process: concurrency cap (adaptive on 429) and
    requests per minute per endpoint.

    Args:
        max_wait: Seconds a call may wait for capacity before it fails with
            :class:`ModelCallError`.
    """

    def __init__(self, *, max_wait: float = 900.0) -> None:
        self._max_wait = max_wait
        self._cond = threading.Condition()
        self._endpoints: dict[str, _Endpoint] = {}

    def __call__(self, model: ModelConfig) -> contextlib.AbstractContextManager[object]:
        limits = EndpointLimits.of(model)
        if limits is None:
            return contextlib.nullcontext()
        return self._slot(limits)

    def _state(self, limits: EndpointLimits) -> _Endpoint:
        state = self._endpoints.get(limits.key)
        if state is None:
            state = _Endpoint(limits, cap=float(limits.max_concurrency or 0))
            self._endpoints[limits.key] = state
        return state

    def _wait_for(self, state: _Endpoint, now: float) -> float:
        """Seconds until a call may start (0: now)."""
        limits = state.limits
        if limits.max_concurrency and state.in_flight >= max(1, int(state.cap)):
            return 0.05
        if limits.requests_per_minute:
            while state.starts and state.starts[0] <= now - 60.0:
                state.starts.popleft()
            if len(state.starts) >= limits.requests_per_minute:
                return state.starts[0] + 60.0 - now
        return 0.0

    @contextlib.contextmanager
    def _slot(self, limits: EndpointLimits) -> Iterator[object]:
        give_up = time.monotonic() + self._max_wait
        with self._cond:
            state = self._state(limits)
            while (wait := self._wait_for(state, time.monotonic())) > 0:
                if time.monotonic() + min(wait, 0.05) > give_up:
                    raise ModelCallError(
                        f"no capacity on the endpoint within {self._max_wait:.0f}s",
                        transient=True,
                        attempts=0,
                    )
                self._cond.wait(timeout=min(wait, 1.0))
            state.in_flight += 1
            state.starts.append(time.monotonic())
        try:
            yield state
        except BaseException as exc:
            if limits.max_concurrency and is_rate_limited(exc):
                with self._cond:
                    # Once per window: the calls in flight all get 429 together.
                    now = time.monotonic()
                    if now - state.shrunk_at >= limits.shrink_every:
                        state.cap, state.shrunk_at = limits.shrink(state.cap), now
            raise
        else:
            if limits.max_concurrency:
                with self._cond:
                    state.cap = limits.grow(state.cap)
        finally:
            with self._cond:
                state.in_flight -= 1
                self._cond.notify_all()
