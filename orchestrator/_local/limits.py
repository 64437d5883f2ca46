"""Endpoint limits in local mode: the same caps, budgets and adaptation as the
fleet's Redis gate, held in this process."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from verifleet.pipeline import ModelCallError, endpoint_pause
from verifleet.schemas import ModelConfig
from verifleet.store import EndpointGate, EndpointLimits, is_rate_limited

__all__ = ["LocalCallGate"]

_log = logging.getLogger(__name__)

_WINDOW = 60.0


@dataclass
class _Spend:
    """The tokens of one call started at ``at``, in the endpoint's window while
    ``live``."""

    at: float
    tokens: int
    live: bool = True


@dataclass
class _Endpoint:
    limits: EndpointLimits
    cap: float
    in_flight: int = 0
    shrunk_at: float = float("-inf")
    paused_until: float = float("-inf")  # a 429's Retry-After, for every caller
    starts: deque[float] = field(default_factory=deque)
    spends: deque[_Spend] = field(default_factory=deque)
    tokens_used: int = 0  # sum of the live spends' tokens

    def prune(self, now: float) -> None:
        """Drop the starts and spends older than the window."""
        while self.starts and self.starts[0] <= now - _WINDOW:
            self.starts.popleft()
        while self.spends and self.spends[0].at <= now - _WINDOW:
            spend = self.spends.popleft()
            spend.live = False
            self.tokens_used -= spend.tokens

    def settle(self, spend: _Spend, tokens: int) -> None:
        """Replace a call's estimate by ``tokens`` while it is still in the window
        (a call that outlived the window no longer counts either way)."""
        if spend.live:
            self.tokens_used += tokens - spend.tokens
            spend.tokens = tokens


class _Slot:
    """What the gate yields: the caller reports the call's actual tokens to it."""

    __slots__ = ("used",)

    def __init__(self) -> None:
        self.used: int | None = None

    def record_usage(self, tokens: int) -> None:
        """Keep the input + output tokens the provider reported for this call."""
        self.used = max(0, int(tokens))


class LocalCallGate(EndpointGate):
    """A ``CallGate`` for one process: concurrency cap (adaptive on 429), requests
    per minute and tokens per minute per endpoint.

    Tokens: a call reserves its estimate (``tokens``, 0 when the caller passes
    none) when it starts, the call waits while the tokens of the calls started in
    the last 60 s plus its own would exceed ``tokens_per_minute``, and the
    reservation becomes the call's reported usage when it ends (see
    :meth:`EndpointLimits.tokens_fit`). A call larger than the whole budget is let
    through alone once the window is empty instead of waiting forever. A call
    answered 429 used no tokens; any other failure keeps its estimate, since the
    provider may have done the work.

    A 429 with ``Retry-After`` pauses the endpoint: no call to it starts until
    then (:func:`~verifleet.pipeline.endpoint_pause`).

    Args:
        max_wait: Seconds a call may wait for capacity before it fails with
            :class:`ModelCallError` (0: fail at once instead of waiting).
        clock: Monotonic seconds; injected by tests that age the window without
            waiting a minute.
    """

    def __init__(
        self, *, max_wait: float = 900.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self._max_wait = max_wait
        self._clock = clock
        self._cond = threading.Condition()
        self._endpoints: dict[str, _Endpoint] = {}

    def tokens_in_window(self, model: ModelConfig) -> int:
        """Tokens of ``model``'s endpoint's calls started in the last 60 s (estimates
        of the calls in flight, reported usage of the finished ones)."""
        limits = EndpointLimits.of(model)
        if limits is None:
            return 0
        with self._cond:
            state = self._state(limits)
            state.prune(self._clock())
            return state.tokens_used

    def _state(self, limits: EndpointLimits) -> _Endpoint:
        state = self._endpoints.get(limits.key)
        if state is None:
            state = _Endpoint(limits, cap=float(limits.max_concurrency or 0))
            self._endpoints[limits.key] = state
        return state

    def _wait_for(self, state: _Endpoint, now: float, tokens: int) -> float:
        """Seconds until a call reserving ``tokens`` may start (0: now)."""
        limits = state.limits
        if now < state.paused_until:
            return state.paused_until - now
        if limits.max_concurrency and state.in_flight >= max(1, int(state.cap)):
            return 0.05
        state.prune(now)
        if limits.requests_per_minute and len(state.starts) >= limits.requests_per_minute:
            return state.starts[0] + _WINDOW - now
        if limits.tokens_per_minute and not limits.tokens_fit(state.tokens_used, tokens):
            # Nothing changes before the oldest spend ages out (or a call in
            # flight settles below its estimate, which wakes the waiters).
            return state.spends[0].at + _WINDOW - now
        return 0.0

    @contextlib.contextmanager
    def _slot(self, limits: EndpointLimits, tokens: int) -> Iterator[object]:
        give_up = self._clock() + self._max_wait
        with self._cond:
            state = self._state(limits)
            while (wait := self._wait_for(state, self._clock(), tokens)) > 0:
                left = give_up - self._clock()
                if left <= 0:
                    raise ModelCallError(
                        f"no capacity on the endpoint within {self._max_wait:.0f}s",
                        transient=True,
                        attempts=0,
                    )
                # Never past give_up: a wait of a whole RPM window or a pause must
                # not stretch max_wait.
                self._cond.wait(timeout=min(wait, 1.0, left))
            now = self._clock()
            state.in_flight += 1
            if limits.requests_per_minute:
                state.starts.append(now)
            spend = _Spend(now, tokens, live=bool(limits.tokens_per_minute))
            if spend.live:
                state.spends.append(spend)
                state.tokens_used += tokens
        slot = _Slot()
        try:
            yield slot
        except BaseException as exc:
            with self._cond:
                if is_rate_limited(exc):
                    state.settle(spend, 0)
                    # Once per window: the calls in flight all get 429 together.
                    now = self._clock()
                    state.paused_until = max(state.paused_until, now + endpoint_pause(exc))
                    if limits.max_concurrency and now - state.shrunk_at >= limits.shrink_every:
                        state.cap, state.shrunk_at = limits.shrink(state.cap), now
                elif slot.used is not None:
                    state.settle(spend, slot.used)
            raise
        else:
            with self._cond:
                if slot.used is not None:
                    state.settle(spend, slot.used)
                if limits.max_concurrency:
                    state.cap = limits.grow(state.cap)
        finally:
            with self._cond:
                state.in_flight -= 1
                self._cond.notify_all()
