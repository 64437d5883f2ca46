"""Endpoint limits shared by the local gate and the fleet-wide Redis gate.

A model endpoint is identified by where requests go (base URL or provider) and
the model name, so two model configs that hit the same endpoint share one limit.
Three limits, each optional: calls in flight (``max_concurrency``), calls started
in any 60 s window (``requests_per_minute``) and tokens of the calls started in any
60 s window (``tokens_per_minute``, see :meth:`EndpointLimits.tokens_fit`).
The concurrency cap adapts: it shrinks multiplicatively when the endpoint answers
429 and grows back additively on success (AIMD), never above the configured cap.

Two choices keep the 429s near zero once adapted (measured with bench/limits.py
against an endpoint admitting half the configured cap: with +1/cap per success
and a shrink per 429, 4% of calls got 429 throughout the run, evenly):

- at most one shrink per :data:`SHRINK_EVERY` seconds: the calls in flight when
  the endpoint starts refusing all get 429 together, and shrinking once for each
  collapsed the cap to a fraction of what the endpoint takes;
- growth of :data:`GROWTH` / cap per success, i.e. one more slot per ten caps'
  worth of successes, so probing above the endpoint's real limit is rare.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from verifleet.schemas import ModelConfig

__all__ = ["EndpointGate", "EndpointLimits", "endpoint_id", "is_rate_limited"]

_log = logging.getLogger(__name__)

SHRINK = 0.7
SHRINK_EVERY = 1.0
GROWTH = 0.1
MIN_CAP = 1.0


def endpoint_id(model: ModelConfig) -> str:
    """A short stable id of the endpoint ``model`` sends requests to."""
    where = model.endpoint_base_url or model.model_provider or model.interface
    return hashlib.sha256(f"{where}\x1f{model.model_name}".encode()).hexdigest()[:16]


def is_rate_limited(exc: BaseException | None) -> bool:
    """True when ``exc`` is the endpoint saying 429 Too Many Requests."""
    if exc is None:
        return False
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status == 429


@dataclass(frozen=True)
class EndpointLimits:
    """The configured limits of one endpoint (None: unlimited)."""

    shrink_factor: ClassVar[float] = SHRINK
    shrink_every: ClassVar[float] = SHRINK_EVERY
    growth: ClassVar[float] = GROWTH

    key: str
    max_concurrency: int | None
    requests_per_minute: int | None
    tokens_per_minute: int | None = None

    @classmethod
    def of(cls, model: ModelConfig) -> EndpointLimits | None:
        """The limits of ``model``'s endpoint, or None when it has none."""
        if (
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
        )

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

    def shrink(self, cap: float) -> float:
        """The adaptive cap after a 429."""
        return max(MIN_CAP, cap * SHRINK)

    def grow(self, cap: float) -> float:
        """The adaptive cap after a success (+1 per ``cap / GROWTH`` successes)."""
        ceiling = float(self.max_concurrency or 1)
        return min(ceiling, cap + GROWTH / max(cap, 1.0))


class EndpointGate(ABC):
    """What the local and the Redis gate share: the ``CallGate`` entry point (see
    ``verifleet.pipeline.CallGate``) that looks up a model's limits and lets an
    unlimited model through untouched. Subclasses hold the limits' state and
    implement :meth:`_slot`; they call ``super().__init__()``.
    """

    #: Callers pass ``tokens=`` (see ``verifleet.pipeline.CallGate``).
    accepts_token_estimate = True

    def __init__(self) -> None:
        self._unestimated: set[str] = set()  # endpoints already warned about

    def __call__(
        self, model: ModelConfig, *, tokens: int | None = None
    ) -> contextlib.AbstractContextManager[object]:
        limits = EndpointLimits.of(model)
        if limits is None:
            return contextlib.nullcontext()
        if tokens is None and limits.tokens_per_minute and limits.key not in self._unestimated:
            # A caller written before token budgets: warn once per endpoint, not per call.
            self._unestimated.add(limits.key)
            _log.warning(
                "a caller of %s passes no token estimate: its calls reserve nothing and "
                "count only the usage they report against tokens_per_minute",
                model.model_name,
            )
        return self._slot(limits, max(0, tokens or 0))

    @abstractmethod
    def _slot(
        self, limits: EndpointLimits, tokens: int
    ) -> contextlib.AbstractContextManager[object]:
        """One call's slot at the endpoint of ``limits``, reserving ``tokens``."""
