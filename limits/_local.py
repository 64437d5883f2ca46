"""The local backend: the same window, budgets and pause as the fleet's Redis
backend, held in this process (``verifleet run``)."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from verifleet.schemas import ModelConfig

from ._base import EndpointGate, GateSlot
from ._policy import POLICY, AdaptivePolicy, EndpointLimits, Window
from ._protocol import NoCapacityError, Slot

__all__ = ["LocalCallGate"]

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
    window: Window = field(default_factory=Window)
    in_flight: int = 0
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


class LocalCallGate(EndpointGate):
    """A :class:`~verifleet.limits.CallGate` for one process: the adaptive window
    (never above ``max_concurrency``), requests per minute and tokens per minute
    per endpoint, and the ``Retry-After`` pause.

    Tokens: a call reserves its estimate (``tokens``) when it starts, waits while
    the tokens of the calls started in the last 60 s plus its own would exceed
    ``tokens_per_minute``, and the reservation becomes the call's reported usage
    when it ends (see :meth:`EndpointLimits.tokens_fit`). A call larger than the
    whole budget is let through alone once the window is empty instead of
    waiting forever. A call answered 429 used no tokens; any other failure keeps
    its estimate, since the provider may have done the work.

    A pushback carrying ``Retry-After`` pauses the endpoint: no call to it
    starts until then (except during an adaptive window's slow start, see
    :meth:`~verifleet.limits.Window.pause_applies`).

    Args:
        max_wait: Seconds a call may wait for room before entering raises
            :class:`NoCapacityError` (0: fail at once instead of waiting).
        clock: Monotonic seconds; injected by tests that age the window without
            waiting a minute.
        policy: The adaptive window's constants.
    """

    def __init__(
        self,
        *,
        max_wait: float = 900.0,
        clock: Callable[[], float] = time.monotonic,
        policy: AdaptivePolicy = POLICY,
    ) -> None:
        self._max_wait = max_wait
        self._clock = clock
        self._policy = policy
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

    def limit(self, model: ModelConfig) -> int | None:
        """Calls to ``model``'s endpoint this gate lets be in flight now (the
        window, at most the ceiling); None when no window limits them."""
        limits = EndpointLimits.of(model)
        if limits is None or not limits.ceiling:
            return None
        with self._cond:
            return self._limit(self._state(limits))

    def window(self, model: ModelConfig) -> Window | None:
        """A copy of the window of ``model``'s endpoint (None: no window)."""
        limits = EndpointLimits.of(model)
        if limits is None or not limits.ceiling:
            return None
        with self._cond:
            return dataclasses.replace(self._state(limits).window)

    def _state(self, limits: EndpointLimits) -> _Endpoint:
        state = self._endpoints.get(limits.key)
        if state is None:
            window = Window(size=self._policy.start(limits))
            state = self._endpoints[limits.key] = _Endpoint(limits, window)
        elif state.limits != limits:
            # Another config of the same endpoint (a lowered max_concurrency)
            # applies at once; what the window learned stays.
            state.limits = limits
        return state

    def _limit(self, state: _Endpoint) -> int:
        ceiling = state.limits.ceiling
        return state.window.limit(ceiling) if state.limits.adaptive else ceiling

    def _wait_for(self, state: _Endpoint, now: float, tokens: int) -> float:
        """Seconds until a call reserving ``tokens`` may start (0: now)."""
        limits = state.limits
        if now < state.paused_until:
            return state.paused_until - now
        if limits.ceiling and state.in_flight >= self._limit(state):
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
    def _slot(self, limits: EndpointLimits, tokens: int) -> Iterator[Slot]:
        give_up = self._clock() + self._max_wait
        with self._cond:
            state = self._state(limits)
            while (wait := self._wait_for(state, self._clock(), tokens)) > 0:
                left = give_up - self._clock()
                if left <= 0:
                    raise NoCapacityError(
                        f"no capacity on the endpoint within {self._max_wait:.0f}s"
                    )
                # Never past give_up: a wait of a whole RPM window or a pause must
                # not stretch max_wait.
                self._cond.wait(timeout=min(wait, 1.0, left))
            started = self._clock()
            state.in_flight += 1
            if limits.requests_per_minute:
                state.starts.append(started)
            spend = _Spend(started, tokens, live=bool(limits.tokens_per_minute))
            if spend.live:
                state.spends.append(spend)
                state.tokens_used += tokens
        slot = GateSlot()
        failed = False
        try:
            yield slot
        except BaseException:
            failed = True
            raise
        finally:
            with self._cond:
                self._settle(state, spend, slot, failed=failed, started=started)
                state.in_flight -= 1
                self._cond.notify_all()

    def _settle(
        self, state: _Endpoint, spend: _Spend, slot: GateSlot, *, failed: bool, started: float
    ) -> None:
        """What one call's end tells the endpoint's state (called under the lock)."""
        now = self._clock()
        if slot.pushed_back:
            state.settle(spend, 0)  # a refused call used nothing
            if not state.limits.adaptive or state.window.pause_applies(
                started=started, now=now, policy=self._policy
            ):
                state.paused_until = max(state.paused_until, now + slot.pause)
            if state.limits.adaptive:
                state.window.pushed_back(
                    in_flight=state.in_flight, now=now, policy=self._policy, started=started
                )
            return
        if slot.used is not None:
            state.settle(spend, slot.used)
        if not failed and state.limits.adaptive:
            state.window.succeeded(
                state.limits.ceiling,
                latency=now - started,
                in_flight=state.in_flight,
                now=now,
                policy=self._policy,
            )
