"""Verification primitives: how one extracted value is compared with its ground truth.

A primitive is a small pydantic model whose parameters configure the comparison
(``ExactMatch(normalize=["lowercase"])``). Parsed primitives compare the value the
judge extracted with the ground truth; trace primitives (see ``trace.py``) look at
the raw response instead and keep their field out of the judge's schema.

:meth:`VerificationPrimitive.check` never raises for values of the wrong shape: a
value that cannot be converted (``float("abc")``, ``None`` for a number) simply does
not match, because a judge that returns garbage has not produced the right answer.
"""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator
from rapidfuzz import fuzz

from .normalizers import Normalizer, apply_normalizers
from .normalizers import default_normalizers as _default_normalizers

__all__ = [
    "BooleanMatch",
    "ContainsAll",
    "ContainsAny",
    "ExactMatch",
    "LiteralMatch",
    "RegexMatch",
    "SemanticMatch",
    "TracePrimitive",
    "VerificationPrimitive",
]

# Conversions a primitive performs on judge output; anything else is a bug.
_MISMATCH_ERRORS = (TypeError, ValueError, ArithmeticError, re.error)

_TRUE_WORDS = frozenset({"true", "yes", "y", "1", "correct"})
_FALSE_WORDS = frozenset({"false", "no", "n", "0", "incorrect", "none", ""})


class VerificationPrimitive(BaseModel):
    """Base class of every primitive.

    Subclasses implement :meth:`compare`; callers use :meth:`check`, which turns
    conversion errors into a failed match.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: True for primitives that read the raw response instead of a parsed value.
    is_trace: ClassVar[bool] = False

    def compare(self, extracted: object, expected: object) -> bool:
        """Decide whether ``extracted`` matches ``expected``; may raise on bad input."""
        raise NotImplementedError(f"{type(self).__name__} does not implement compare()")

    def check(self, extracted: object, expected: object) -> bool:
        """Whether the judge's value matches the ground truth.

        Returns False (never raises) when ``extracted`` is ``None`` or cannot be
        converted to the type the comparison needs.
        """
        if extracted is None:
            return expected is None and self._accepts_none()
        try:
            return bool(self.compare(extracted, expected))
        except _MISMATCH_ERRORS:
            return False

    def _accepts_none(self) -> bool:
        return False

    def credit(self, extracted: object, expected: object) -> float:
        """Raw partial credit; may raise on bad input. Default: 1.0 when
        :meth:`check` passes, else 0.0. Graded primitives override this."""
        return 1.0 if self.check(extracted, expected) else 0.0

    def score(self, extracted: object, expected: object) -> float:
        """Partial credit in [0.0, 1.0] for ``verify_granular``; 0.0 (never an
        exception) for ``None`` or values that do not convert."""
        if extracted is None:
            return 1.0 if self.check(extracted, expected) else 0.0
        try:
            return min(1.0, max(0.0, float(self.credit(extracted, expected))))
        except _MISMATCH_ERRORS:
            return 0.0

    def describe(self) -> dict[str, object]:
        """JSON-safe description: the class name under ``type`` plus the parameters."""
        data = self.model_dump(mode="json")
        data["type"] = type(self).__name__
        return data


class TracePrimitive(VerificationPrimitive):
    """Base class of primitives that evaluate the raw response text.

    Their fields are excluded from the judge's schema; the field's ground truth says
    whether the condition is expected to hold (``True``) or not (``False``).
    """

    is_trace: ClassVar[bool] = True

    def check_trace(self, raw_trace: str) -> bool:
        """Evaluate the condition on the raw response."""
        raise NotImplementedError(f"{type(self).__name__} does not implement check_trace()")

    def compare(self, extracted: object, expected: object) -> bool:
        """Trace primitives compare the trace, not a parsed value.

        Raises:
            TypeError: Always; use :meth:`check_trace`.
        """
        raise TypeError(f"{type(self).__name__} checks the raw response: use check_trace()")


def _as_bool(value: object) -> bool:
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
        raise ValueError(f"not a boolean: {value!r}")
    return bool(value)


class BooleanMatch(VerificationPrimitive):
    """The extracted boolean equals the ground truth.

    Strings such as ``"yes"``/``"no"``/``"true"``/``"false"`` are understood; other
    strings do not match.
    """

    def compare(self, extracted: object, expected: object) -> bool:
        return _as_bool(extracted) == _as_bool(expected)


class ExactMatch(VerificationPrimitive):
    """Both values, as text and normalised, are equal (default: lowercase + strip)."""

    normalize: list[Normalizer] = Field(default_factory=_default_normalizers)

    def compare(self, extracted: object, expected: object) -> bool:
        left = apply_normalizers(self.normalize, str(extracted))
        return left == apply_normalizers(self.normalize, str(expected))

    def _accepts_none(self) -> bool:
        return True


class ContainsAny(VerificationPrimitive):
    """The extracted text contains at least one of ``substrings`` (ground truth unused)."""

    substrings: list[str]
    normalize: list[Normalizer] = Field(default_factory=list)

    def compare(self, extracted: object, expected: object) -> bool:
        text = apply_normalizers(self.normalize, str(extracted))
        return any(apply_normalizers(self.normalize, sub) in text for sub in self.substrings)


class ContainsAll(VerificationPrimitive):
    """The extracted text contains every one of ``substrings`` (ground truth unused)."""

    substrings: list[str]
    normalize: list[Normalizer] = Field(default_factory=list)

    def compare(self, extracted: object, expected: object) -> bool:
        text = apply_normalizers(self.normalize, str(extracted))
        return all(apply_normalizers(self.normalize, sub) in text for sub in self.substrings)


def _regex_flags(names: list[str]) -> int:
    value = 0
    for name in names:
        flag = getattr(re, name.upper(), None)
        if not isinstance(flag, re.RegexFlag):
            raise ValueError(f"unknown regex flag {name!r}")
        value |= flag
    return value


class RegexMatch(VerificationPrimitive):
    """``re.search(pattern, extracted)`` finds a match (ground truth unused).

    ``flags`` are ``re`` flag names such as ``"IGNORECASE"``; an unknown name is
    rejected when the primitive is built.
    """

    pattern: str
    flags: list[str] = Field(default_factory=list)
    fullmatch: bool = False

    @field_validator("flags")
    @classmethod
    def _known_flags(cls, value: list[str]) -> list[str]:
        _regex_flags(value)
        return value

    def compare(self, extracted: object, expected: object) -> bool:
        finder = re.fullmatch if self.fullmatch else re.search
        return finder(self.pattern, str(extracted), _regex_flags(self.flags)) is not None


class LiteralMatch(VerificationPrimitive):
    """Plain equality (``==``), for ``Literal[...]`` and enum-like fields."""

    def compare(self, extracted: object, expected: object) -> bool:
        return bool(extracted == expected)

    def _accepts_none(self) -> bool:
        return True


class SemanticMatch(VerificationPrimitive):
    """Text similarity at or above ``threshold`` (0.0–1.0).

    Inside the template this is a lexical stand-in (token-set similarity after
    lowercasing), so a template using it verifies without an embedding model; the
    pipeline's embedding check can still override a failed field verification.
    """

    threshold: float = Field(default=0.85, ge=0.0, le=1.0)

    def compare(self, extracted: object, expected: object) -> bool:
        left, right = str(extracted).lower().strip(), str(expected).lower().strip()
        return fuzz.token_set_ratio(left, right) / 100.0 >= self.threshold
