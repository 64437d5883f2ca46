"""Numeric primitives: exact, tolerance, range and one-sided bounds.

Values are converted with ``float()`` (so ``"3.5"`` and ``Decimal`` work; a value
that does not convert does not match). Booleans are refused as numbers, because a
judge answering ``true`` to "how many" has not answered the question.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field

from .primitives import VerificationPrimitive

__all__ = [
    "NumericExact",
    "NumericMaximum",
    "NumericMinimum",
    "NumericRange",
    "NumericTolerance",
    "to_number",
]


def to_number(value: Any) -> float:
    """Convert ``value`` to a finite float.

    Raises:
        TypeError: ``value`` is a bool or ``None``.
        ValueError: It does not convert, or is NaN/infinite.
    """
    if value is None or isinstance(value, bool):
        raise TypeError(f"not a number: {value!r}")
    if isinstance(value, str):
        value = value.strip().replace(",", "")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"not a finite number: {value!r}")
    return number


class NumericExact(VerificationPrimitive):
    """Equal after conversion to float."""

    def compare(self, extracted: object, expected: object) -> bool:
        return to_number(extracted) == to_number(expected)


class NumericTolerance(VerificationPrimitive):
    """Within ``tolerance`` of the ground truth.

    ``mode="relative"`` (default): ``|x - gt| / |gt| <= tolerance`` (with ``gt == 0``
    only an exact 0 matches); ``mode="absolute"``: ``|x - gt| <= tolerance``.
    """

    tolerance: float = Field(ge=0.0)
    mode: Literal["relative", "absolute"] = "relative"

    def compare(self, extracted: object, expected: object) -> bool:
        value, target = to_number(extracted), to_number(expected)
        diff = abs(value - target)
        if self.mode == "absolute":
            return diff <= self.tolerance
        if target == 0.0:
            return diff == 0.0
        return diff / abs(target) <= self.tolerance


class NumericRange(VerificationPrimitive):
    """Inside ``[min, max]`` (either bound may be open; ground truth unused)."""

    min: float | None = None
    max: float | None = None
    exclusive_min: bool = False
    exclusive_max: bool = False

    def compare(self, extracted: object, expected: object) -> bool:
        value = to_number(extracted)
        if self.min is not None and (
            value < self.min or (self.exclusive_min and value == self.min)
        ):
            return False
        return not (
            self.max is not None
            and (value > self.max or (self.exclusive_max and value == self.max))
        )


class NumericMinimum(VerificationPrimitive):
    """At least the ground truth (strictly greater when ``exclusive``)."""

    exclusive: bool = False

    def compare(self, extracted: object, expected: object) -> bool:
        value, bound = to_number(extracted), to_number(expected)
        return value > bound if self.exclusive else value >= bound


class NumericMaximum(VerificationPrimitive):
    """At most the ground truth (strictly less when ``exclusive``)."""

    exclusive: bool = False

    def compare(self, extracted: object, expected: object) -> bool:
        value, bound = to_number(extracted), to_number(expected)
        return value < bound if self.exclusive else value <= bound
