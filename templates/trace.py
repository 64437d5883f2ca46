"""Trace primitives: conditions on the raw response text, not on parsed values.

A field verified with one of these is not shown to the judge. Its result is
``check_trace(raw_response) == bool(ground_truth)``, so ``ground_truth=False``
asserts the condition must *not* hold.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from .primitives import TracePrimitive

__all__ = ["TraceContains", "TraceLength", "TraceRegex"]


class TraceRegex(TracePrimitive):
    """The pattern is found in the response (at least ``count_min`` times when set)."""

    pattern: str
    count_min: int | None = Field(default=None, ge=0)
    ignore_case: bool = False

    def check_trace(self, raw_trace: str) -> bool:
        flags = re.IGNORECASE if self.ignore_case else 0
        if self.count_min is None:
            return re.search(self.pattern, raw_trace, flags) is not None
        return len(re.findall(self.pattern, raw_trace, flags)) >= self.count_min


class TraceContains(TracePrimitive):
    """The response contains ``substring``."""

    substring: str
    case_sensitive: bool = True

    def check_trace(self, raw_trace: str) -> bool:
        if self.case_sensitive:
            return self.substring in raw_trace
        return self.substring.lower() in raw_trace.lower()


class TraceLength(TracePrimitive):
    """The response length (``chars`` or ``words``) lies within ``[min, max]``."""

    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)
    unit: Literal["chars", "words"] = "chars"

    def check_trace(self, raw_trace: str) -> bool:
        length = len(raw_trace.split()) if self.unit == "words" else len(raw_trace)
        if self.min is not None and length < self.min:
            return False
        return not (self.max is not None and length > self.max)
