"""Graded numeric primitives: a binary ``check`` plus continuous partial credit.

``check()`` stays a hard gate (it drives ``verify()``); ``score()`` gives credit that
decays with distance, and ``verify_granular()`` uses it instead of 0/1. A near miss
can therefore fail ``verify()`` and still earn part of the field's weight.

Decay maps the normalised distance ``t`` (0 at full credit, 1 at the cutoff) to
``1 - t`` (``linear``) or ``1 - t**2`` (``quadratic``), clipped to [0, 1].
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from .numeric import to_number
from .primitives import VerificationPrimitive

__all__ = ["NumericGraded", "NumericRangeGraded", "NumericThresholdGraded"]

Decay = Literal["linear", "quadratic"]


def _decayed(t: float, decay: Decay) -> float:
    t = max(0.0, t)
    credit = 1.0 - (t * t if decay == "quadratic" else t)
    return min(1.0, max(0.0, credit))


class NumericGraded(VerificationPrimitive):
    """Distance from the ground truth, with credit decaying to 0 at ``cutoff``.

    ``mode="relative"`` measures ``|x - gt| / |gt|`` (with ``gt == 0`` only 0 is at
    distance 0); ``"absolute"`` measures ``|x - gt|``. Without ``full_credit``,
    ``check`` passes within ``cutoff``; with it, ``check`` passes within
    ``full_credit`` and credit decays from there to ``cutoff``.
    """

    cutoff: float = Field(gt=0.0)
    full_credit: float | None = Field(default=None, ge=0.0)
    mode: Literal["relative", "absolute"] = "relative"
    decay: Decay = "linear"

    @model_validator(mode="after")
    def _bands(self) -> NumericGraded:
        if self.full_credit is not None and self.full_credit >= self.cutoff:
            raise ValueError("full_credit must be smaller than cutoff")
        return self

    def _distance(self, extracted: object, expected: object) -> float:
        value, target = to_number(extracted), to_number(expected)
        diff = abs(value - target)
        if self.mode == "absolute":
            return diff
        if target == 0.0:
            return 0.0 if diff == 0.0 else float("inf")
        return diff / abs(target)

    def compare(self, extracted: object, expected: object) -> bool:
        gate = self.cutoff if self.full_credit is None else self.full_credit
        return self._distance(extracted, expected) <= gate

    def credit(self, extracted: object, expected: object) -> float:
        distance = self._distance(extracted, expected)
        inner = self.full_credit or 0.0
        if distance <= inner:
            return 1.0
        return _decayed((distance - inner) / (self.cutoff - inner), self.decay)


class NumericRangeGraded(VerificationPrimitive):
    """Full credit inside ``[min, max]``, decaying over ``margin`` outside it
    (ground truth unused). ``mode="relative"`` makes ``margin`` a fraction of the
    band width."""

    min: float
    max: float
    margin: float = Field(gt=0.0)
    mode: Literal["absolute", "relative"] = "absolute"
    decay: Decay = "linear"
    exclusive_min: bool = False
    exclusive_max: bool = False

    @model_validator(mode="after")
    def _band(self) -> NumericRangeGraded:
        if self.min >= self.max:
            raise ValueError("min must be smaller than max")
        return self

    def compare(self, extracted: object, expected: object) -> bool:
        value = to_number(extracted)
        above_min = value > self.min if self.exclusive_min else value >= self.min
        below_max = value < self.max if self.exclusive_max else value <= self.max
        return above_min and below_max

    def credit(self, extracted: object, expected: object) -> float:
        value = to_number(extracted)
        outside = max(self.min - value, value - self.max, 0.0)
        if outside == 0.0:
            return 1.0
        width = self.margin * (self.max - self.min) if self.mode == "relative" else self.margin
        return _decayed(outside / width, self.decay)


class NumericThresholdGraded(VerificationPrimitive):
    """One-sided bound at the ground truth: ``direction="max"`` passes at or below
    it, ``"min"`` at or above (strictly with ``exclusive``). Values past the bound
    earn credit decaying over ``margin`` (relative: a fraction of ``|threshold|``)."""

    direction: Literal["max", "min"] = "max"
    margin: float = Field(gt=0.0)
    mode: Literal["relative", "absolute"] = "relative"
    decay: Decay = "linear"
    exclusive: bool = False

    def compare(self, extracted: object, expected: object) -> bool:
        value, bound = to_number(extracted), to_number(expected)
        if self.direction == "max":
            return value < bound if self.exclusive else value <= bound
        return value > bound if self.exclusive else value >= bound

    def credit(self, extracted: object, expected: object) -> float:
        value, bound = to_number(extracted), to_number(expected)
        if self.compare(value, bound):
            return 1.0
        past = value - bound if self.direction == "max" else bound - value
        width = self.margin * abs(bound) if self.mode == "relative" else self.margin
        if width == 0.0:
            return 0.0
        return _decayed(past / width, self.decay)
