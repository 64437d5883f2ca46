"""List primitives: set containment/overlap and ordered element-wise match.

String items are normalised (``normalize``) before comparison so that
``["EGFR "]`` and ``["egfr"]`` can be made equal; other items compare as they are.
A single string where a list is expected is treated as a one-item list.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import Field, model_validator

from .normalizers import Normalizer, apply_normalizers
from .normalizers import default_normalizers as _default_normalizers
from .primitives import VerificationPrimitive

__all__ = ["OrderedMatch", "SetContainment"]


def _items(value: object) -> list[object]:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        return [value]
    return list(value)


def _normalise(items: list[object], normalizers: list[Normalizer]) -> list[object]:
    return [apply_normalizers(normalizers, i) if isinstance(i, str) else i for i in items]


class SetContainment(VerificationPrimitive):
    """Compare the extracted list with the ground truth as sets.

    Modes: ``exact`` (same elements), ``subset`` (extracted ⊆ ground truth),
    ``superset`` (extracted ⊇ ground truth), ``overlap`` (at least ``min_overlap``
    common elements, default 1, or at least ``min_overlap_fraction`` of the ground
    truth when that is given).
    """

    mode: Literal["exact", "subset", "superset", "overlap"] = "exact"
    min_overlap: int | None = Field(default=None, ge=1)
    min_overlap_fraction: float | None = Field(default=None, gt=0.0, le=1.0)
    normalize: list[Normalizer] = Field(default_factory=list)

    @model_validator(mode="after")
    def _overlap_settings(self) -> SetContainment:
        if self.mode != "overlap" and (
            self.min_overlap is not None or self.min_overlap_fraction is not None
        ):
            raise ValueError("min_overlap/min_overlap_fraction only apply to mode='overlap'")
        return self

    def compare(self, extracted: object, expected: object) -> bool:
        got = set(_normalise(_items(extracted), self.normalize))
        want = set(_normalise(_items(expected), self.normalize))
        if self.mode == "exact":
            return got == want
        if self.mode == "subset":
            return got <= want
        if self.mode == "superset":
            return got >= want
        common = len(got & want)
        if self.min_overlap_fraction is not None:
            return bool(want) and common / len(want) >= self.min_overlap_fraction
        return common >= (self.min_overlap or 1)


class OrderedMatch(VerificationPrimitive):
    """Same length and equal element by element, as normalised text
    (default: lowercase + strip)."""

    normalize: list[Normalizer] = Field(default_factory=_default_normalizers)

    def compare(self, extracted: object, expected: object) -> bool:
        got, want = _items(extracted), _items(expected)
        if len(got) != len(want):
            return False
        return all(
            apply_normalizers(self.normalize, str(a)) == apply_normalizers(self.normalize, str(b))
            for a, b in zip(got, want, strict=True)
        )
