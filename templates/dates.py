"""Date primitives: same day, within a tolerance, inside a range.

Values may be ``date``/``datetime`` objects or text. Text is parsed with
``format`` (``strptime``) when given, else as ISO 8601, else with python-dateutil's
flexible parser ("March 15, 2023"). Unparseable text does not match.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Literal

from dateutil import parser as dateutil_parser
from pydantic import Field

from .primitives import VerificationPrimitive

__all__ = ["DateMatch", "DateRange", "DateTolerance", "to_datetime"]


def to_datetime(value: object, fmt: str | None = None) -> datetime:
    """Convert ``value`` to a naive ``datetime``.

    Raises:
        ValueError: Text that does not parse.
        TypeError: A value that is neither text nor a date.
    """
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if not isinstance(value, str):
        raise TypeError(f"not a date: {value!r}")
    text = value.strip()
    if fmt:
        return datetime.strptime(text, fmt)
    try:
        return datetime.fromisoformat(text).replace(tzinfo=None)
    except ValueError:
        # dateutil raises its own ParserError (a ValueError) or OverflowError.
        try:
            return dateutil_parser.parse(text).replace(tzinfo=None)
        except OverflowError as exc:
            raise ValueError(f"date out of range: {value!r}") from exc


class DateMatch(VerificationPrimitive):
    """Same calendar day."""

    format: str | None = None

    def compare(self, extracted: object, expected: object) -> bool:
        return (
            to_datetime(extracted, self.format).date() == to_datetime(expected, self.format).date()
        )


class DateTolerance(VerificationPrimitive):
    """Within ``tolerance`` ``unit`` of the ground truth."""

    tolerance: int = Field(ge=0)
    unit: Literal["days", "hours", "minutes", "weeks"] = "days"

    def compare(self, extracted: object, expected: object) -> bool:
        delta = timedelta(**{self.unit: self.tolerance})
        return abs(to_datetime(extracted) - to_datetime(expected)) <= delta


class DateRange(VerificationPrimitive):
    """Between ``min`` and ``max`` inclusive (either may be open; ground truth unused)."""

    min: str | None = None
    max: str | None = None

    def compare(self, extracted: object, expected: object) -> bool:
        value = to_datetime(extracted)
        if self.min is not None and value < to_datetime(self.min):
            return False
        return not (self.max is not None and value > to_datetime(self.max))
