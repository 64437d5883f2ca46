"""Endpoint limits and the adaptive concurrency window, shared by both backends.

A model endpoint is identified by where requests go (base URL or provider) and
the model name, so two model configs that hit the same endpoint share one limit.
Three limits: calls in flight (the adaptive *window*, never above
``max_concurrency``), calls started in any 60 s window (``requests_per_minute``)
and tokens of the calls started in any 60 s window (``tokens_per_minute``, see
:meth:`EndpointLimits.tokens_fit`).

The window (:class:`AdaptivePolicy`, :class:`Window`) is an AIMD controller in
the spirit of TCP's congestion window, with the endpoint's pushback as the
congestion signal:

- **start**: at the configured ``max_concurrency`` when a model sets one (the
  user said the endpoint takes that many), else at
  :attr:`AdaptivePolicy.initial` (:meth:`AdaptivePolicy.start`);
- **slow start**: until the endpoint first pushes back, every success adds one
  call to the window, so it doubles every round trip;
- **pushback** is a 429 answer, or the smoothed latency rising above twice the
  lowest seen (and by at least :attr:`AdaptivePolicy.latency_floor`: a queueing
  server answers later instead of refusing). The window drops to 0.9 x the calls
  in flight at that moment, once for all the calls admitted before it (they
  come back refused together; a refusal of a call admitted after it shrinks
  again), and that in-flight count is remembered as the endpoint's *peak*;
- **the burst's brake**: the calls in flight at slow start's first refusal
  (its window had grown past them) include the rest of its overshoot, which
  the endpoint never held. Each of their 429s takes one call off the peak and
  the window follows (``backoff`` x the peak), for at most half of the peak
  (slow start at most doubles the window per round trip), so the window
  settles at what the endpoint holds. A window no larger than the calls in
  flight, all refused (a rate limit, a quota), is no overshoot: one decrease;
- **recovery**: below ``peak - 1``, +1 per round trip (a window's worth of
  successes), which restores a window cut by a transient refusal in seconds;
- **probing**: from ``peak - 1`` on, +0.0025 per round trip, faster the longer
  it holds (+0.025 per slot gained): every probe above the limit costs a
  refusal and a decrease, so probes are rare, while a capacity that really
  grew is still found;
- the window only grows while at least half of it is in use, so a light load
  never builds a window it has not tried;
- it never exceeds ``max_concurrency`` (or :data:`DEFAULT_MAX_CONCURRENCY` when
  a model sets none); lowering ``max_concurrency`` applies at once;
- a 429's ``Retry-After`` pauses the endpoint for every caller only when the
  endpoint refuses again soon after a decrease (:meth:`Window.pause_applies`): a
  call admitted after the last decrease, within ``hold`` (or one smoothed
  latency) of it. An isolated refusal (slow start overshooting, a probe one
  call above the limit) is corrected by the decrease itself. Each refused call
  still waits its own ``Retry-After`` before it is tried again, and an endpoint
  that keeps refusing (a rate limit) is paused from its second refusal on.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from verifleet.schemas import ModelConfig

__all__ = [
    "DEFAULT_MAX_CONCURRENCY",
    "POLICY",
    "AdaptivePolicy",
    "EndpointLimits",
    "Window",
    "endpoint_id",
]

#: The window's ceiling for a model that sets no ``max_concurrency``.
DEFAULT_MAX_CONCURRENCY = 256


def endpoint_id(model: ModelConfig) -> str:
    """A short stable id of the endpoint ``model`` sends requests to."""
    where = model.endpoint_base_url or model.model_provider or model.interface
    return hashlib.sha256(f"{where}\x1f{model.model_name}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class AdaptivePolicy:
    """The constants of the adaptive window (see the module docstring).

    Attributes:
        initial: The window before anything was learned about an endpoint.
        backoff: On pushback, the window becomes this times the calls in flight.
        hold: Seconds between two decreases by the latency signal at least
            (and at least one smoothed latency: it lags).
        probe: Window growth per round trip at the last pushback's level.
        probe_gain: Extra growth per round trip for each slot gained above it.
        latency_tolerance: Pushback when the smoothed latency exceeds this
            times the baseline (the lowest latency seen, drifting up slowly) ...
        latency_floor: ... and the baseline by at least this many seconds (the
            latency of an instant endpoint doubles with the client's own load).
        smoothing: Weight of a new latency in the smoothed latency.
        drift: Share of a higher latency the baseline moves towards per call.
    """

    initial: float = 32.0
    backoff: float = 0.9
    hold: float = 1.0
    probe: float = 0.0025
    probe_gain: float = 0.025
    latency_tolerance: float = 2.0
    latency_floor: float = 0.05
    smoothing: float = 0.1
    drift: float = 0.001

    def start(self, limits: EndpointLimits) -> float:
        """The window of an endpoint nothing was learned about yet: its
        configured ``max_concurrency`` when set (never above the ceiling),
        else :attr:`initial`. Both backends start a window here, so a fleet
        and a local run of one config start alike."""
        if limits.max_concurrency is not None:
            return float(max(1, limits.max_concurrency))
        return self.initial

    def latency_limit(self, base: float) -> float:
        """The smoothed latency above which the endpoint counts as queueing."""
        return max(self.latency_tolerance * base, base + self.latency_floor)


#: The policy both backends apply (the Redis backend passes its numbers to Lua).
POLICY = AdaptivePolicy()


@dataclass
class Window:
    """One endpoint's adaptive window (the local backend's state; the Redis
    backend keeps the same fields in a hash and applies the same rules in Lua).

    Attributes:
        size: Calls that may be in flight (a float: growth is fractional).
        peak: Calls in flight at the last pushback; None before the first.
        base: Baseline latency in seconds; None before the first success.
        smooth: Smoothed latency in seconds; None before the first success.
        shrunk_at: When the window last shrank (the caller's clock).
        unheld: Refusals of calls admitted before the last decrease that may
            still take a call off ``peak`` (the burst's brake).
    """

    size: float = POLICY.initial
    peak: float | None = None
    base: float | None = None
    smooth: float | None = None
    shrunk_at: float = -math.inf
    unheld: float = 0.0

    def pause_applies(self, *, started: float, now: float, policy: AdaptivePolicy) -> bool:
        """Whether a 429 at ``now`` of a call that started at ``started`` pauses
        the endpoint (its ``Retry-After``), asked before the refusal moves the
        window: only when the call was admitted after the last decrease and that
        decrease is recent (``hold``, or one smoothed latency), i.e. the
        decrease did not stop the refusals."""
        if started <= self.shrunk_at:
            return False  # the burst the last decrease already answered
        return now - self.shrunk_at < max(policy.hold, self.smooth or 0.0)

    def limit(self, ceiling: int) -> int:
        """Calls that may be in flight now: the window, at most ``ceiling``."""
        return max(1, math.floor(min(float(ceiling), self.size)))

    def succeeded(
        self, ceiling: int, *, latency: float, in_flight: int, now: float, policy: AdaptivePolicy
    ) -> None:
        """A call that held one of ``in_flight`` slots (itself included)
        succeeded after ``latency`` seconds: grow, or shrink when the latency
        says the endpoint is queueing."""
        if self.base is None or self.smooth is None:
            self.base = self.smooth = latency
        else:
            self.base = min(latency, self.base + (latency - self.base) * policy.drift)
            # One stalled call (a GC pause, a busy machine) moves the smoothed
            # latency by a fifth of the threshold at most: only a run of slow
            # calls is pushback.
            sample = min(latency, 2 * policy.latency_limit(self.base))
            self.smooth += (sample - self.smooth) * policy.smoothing
        if self.smooth > policy.latency_limit(self.base):
            self.pushed_back(in_flight=in_flight, now=now, policy=policy)
            return
        size = min(self.size, float(ceiling))
        if in_flight < size / 2:
            return  # a window mostly unused says nothing about the endpoint
        if self.peak is None:
            size += 1.0
        elif size < self.peak - 1:
            size += 1.0 / size
        else:
            size += (policy.probe + policy.probe_gain * (size - (self.peak - 1))) / size
        self.size = min(size, float(ceiling))

    def pushed_back(
        self, *, in_flight: int, now: float, policy: AdaptivePolicy, started: float | None = None
    ) -> None:
        """The endpoint refused (429) a call that started at ``started``, or
        queued (``started`` None: the latency signal) one of ``in_flight`` calls.

        A refusal decreases the window when its call started after the last
        decrease: the calls admitted under the old window come back refused
        together, and only one decrease is due for them, while a refusal of a
        call admitted under the new window says it is still too large. When
        that decrease ended slow start's overshoot (its window had grown past
        the calls in flight), each of the burst's other refusals takes one call
        off the peak instead (the endpoint never held it), lowering the window
        with it, for at most half of the peak (:attr:`unheld`); after any other
        decrease (a window at the calls in flight all refused: a rate limit, a
        quota) they change nothing. The latency signal lags (it is
        smoothed), so it counts once per ``hold`` (at least one smoothed
        latency), and the calls it counted were all held: no brake follows it.
        """
        if started is None:
            if now - self.shrunk_at < max(policy.hold, self.smooth or 0.0):
                return
        elif started <= self.shrunk_at:
            if self.peak is not None and self.unheld >= 1.0:
                self.unheld -= 1.0
                self.peak -= 1.0
                self.size = max(1.0, min(self.size, policy.backoff * self.peak))
            return
        # Slow start's overshoot: its window had grown past the calls in flight.
        overshoot = started is not None and self.peak is None and self.size > in_flight
        self.unheld = float(in_flight // 2) if overshoot else 0.0
        self.size = max(1.0, policy.backoff * min(self.size, float(in_flight)))
        self.peak = float(in_flight)
        self.shrunk_at = now


@dataclass(frozen=True)
class EndpointLimits:
    """The configured limits of one endpoint.

    Attributes:
        key: :func:`endpoint_id` of the model.
        max_concurrency: The configured cap on calls in flight (None: unset).
        requests_per_minute: Calls started in any 60 s window (None: no limit).
        tokens_per_minute: Tokens of the calls started in any 60 s (None: no limit).
        adaptive: Whether the window adapts (the model's ``adaptive_concurrency``).
    """

    key: str
    max_concurrency: int | None
    requests_per_minute: int | None
    tokens_per_minute: int | None = None
    adaptive: bool = True

    @classmethod
    def of(cls, model: ModelConfig) -> EndpointLimits | None:
        """The limits of ``model``'s endpoint, or None when nothing limits it
        (adaptive concurrency turned off and no limit set)."""
        if not model.adaptive_concurrency and (
            model.max_concurrency is None
            and model.requests_per_minute is None
            and model.tokens_per_minute is None
        ):
            return None
        return cls(
            endpoint_id(model),
            model.max_concurrency,
            model.requests_per_minute,
            model.tokens_per_minute,
            model.adaptive_concurrency,
        )

    @property
    def ceiling(self) -> int:
        """The most calls ever in flight: ``max_concurrency``, else
        :data:`DEFAULT_MAX_CONCURRENCY` when adaptive, else 0 (no cap)."""
        if self.max_concurrency is not None:
            return self.max_concurrency
        return DEFAULT_MAX_CONCURRENCY if self.adaptive else 0

    def tokens_fit(self, used: int, tokens: int) -> bool:
        """Whether a call reserving ``tokens`` may start now.

        ``used`` is the sum of the tokens of the calls started in the last 60 s:
        each call's estimate until its actual usage is known, then the actual
        usage. The call fits when ``used + tokens`` stays within
        ``tokens_per_minute``, or when ``used`` is 0: a single call larger than
        the whole budget would otherwise wait forever, so it goes through alone
        on an empty window (and the window then holds more than the budget until
        it ages out). The Redis gate's Lua script applies the same rule.
        """
        budget = self.tokens_per_minute
        return budget is None or used <= 0 or used + tokens <= budget
