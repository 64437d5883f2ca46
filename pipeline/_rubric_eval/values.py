"""JSON schemas for LLM trait values and the rules that turn a judge's value into a
score.

Validation policy (the same for batch, sequential and deep-judgment scoring):

* ``boolean``: a JSON boolean; the strings ``true/yes/false/no`` and the integers
  ``0``/``1`` are accepted too. Anything else is invalid.
* ``score``: an integer (a numeric string or a float is rounded). A value outside
  ``[min_score, max_score]`` is **clamped** to the nearest bound: the judge meant
  "as low/high as it goes". Booleans and non-numeric text are invalid.
* ``literal``: a class name (case and surrounding whitespace ignored) or a class
  index. Any other value scores ``-1`` with the raw value kept as the label, the
  original framework's marker for an invalid class; there is no "nearest" class.

An invalid or missing boolean/score value leaves the trait unscored: it is omitted
from ``llm_trait_scores`` and its reason is recorded in the outcome's
``failed_traits``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from verifleet.errors import VerifleetError

from .protocols import LLMTraitLike, class_names

__all__ = [
    "INVALID_CLASS_INDEX",
    "InvalidTraitValue",
    "TraitValue",
    "coerce_trait_value",
    "score_bounds",
    "trait_kind",
    "value_schema",
]

INVALID_CLASS_INDEX = -1
_TRUE = {"true", "yes", "y", "1", "pass"}
_FALSE = {"false", "no", "n", "0", "fail"}
DEFAULT_MIN_SCORE = 1
DEFAULT_MAX_SCORE = 5


@dataclass(frozen=True)
class TraitValue:
    """A validated trait value: the score and, for literal traits, the label."""

    score: bool | int
    label: str | None = None


class InvalidTraitValue(VerifleetError, ValueError):
    """The judge's value cannot be turned into a score for this trait."""


def trait_kind(trait: LLMTraitLike) -> str:
    """The trait's kind as a plain string (``boolean``, ``score`` or ``literal``)."""
    return str(trait.kind)


def score_bounds(trait: LLMTraitLike) -> tuple[int, int]:
    """``(min, max)`` of a score or literal trait (literal: ``0 .. classes-1``)."""
    if trait_kind(trait) == "literal":
        return 0, max(0, len(class_names(trait)) - 1)
    low = trait.min_score if trait.min_score is not None else DEFAULT_MIN_SCORE
    high = trait.max_score if trait.max_score is not None else DEFAULT_MAX_SCORE
    return low, high


def value_schema(trait: LLMTraitLike) -> dict[str, object]:
    """The JSON schema of one trait's value, as the judge must return it.

    Raises:
        InvalidTraitValue: the trait is literal but has no classes, or its kind is
            not boolean, score or literal (e.g. the original's ``template`` kind).
    """
    kind = trait_kind(trait)
    if kind == "boolean":
        return {"type": "boolean"}
    if kind not in ("score", "literal"):
        raise InvalidTraitValue(f"trait '{trait.name}': kind '{kind}' is not supported")
    if kind == "literal":
        names = class_names(trait)
        if not names:
            raise InvalidTraitValue(f"literal trait '{trait.name}' has no classes")
        return {"type": "string", "enum": names}
    low, high = score_bounds(trait)
    return {"type": "integer", "minimum": low, "maximum": high}


def coerce_trait_value(trait: LLMTraitLike, raw: object) -> TraitValue:
    """Validate ``raw`` (from the judge) for ``trait`` under the module's policy.

    Raises:
        InvalidTraitValue: the value is missing or unusable (boolean/score kinds).
            Literal traits never raise for a bad class: they get index ``-1``.
    """
    kind = trait_kind(trait)
    if raw is None:
        raise InvalidTraitValue(f"trait '{trait.name}': the judge returned no value")
    if kind == "boolean":
        return TraitValue(_as_bool(trait.name, raw))
    if kind == "literal":
        return _as_class(trait, raw)
    low, high = score_bounds(trait)
    return TraitValue(min(high, max(low, _as_int(trait.name, raw))))


def _as_bool(name: str, raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int) and raw in (0, 1):
        return bool(raw)
    if isinstance(raw, str):
        text = raw.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    raise InvalidTraitValue(f"trait '{name}': expected a boolean, got {raw!r}")


def _as_int(name: str, raw: object) -> int:
    # bool is an int subclass: a boolean for a score trait is a judge mistake.
    if isinstance(raw, bool):
        raise InvalidTraitValue(f"trait '{name}': expected an integer score, got {raw!r}")
    if isinstance(raw, int):
        return raw
    number: float
    if isinstance(raw, float):
        number = raw
    elif isinstance(raw, str):
        try:
            number = float(raw.strip())
        except ValueError:
            raise InvalidTraitValue(
                f"trait '{name}': expected an integer score, got {raw!r}"
            ) from None
    else:
        raise InvalidTraitValue(f"trait '{name}': expected an integer score, got {raw!r}")
    if not math.isfinite(number):
        raise InvalidTraitValue(f"trait '{name}': expected an integer score, got {raw!r}")
    return round(number)


def _as_class(trait: LLMTraitLike, raw: object) -> TraitValue:
    names = class_names(trait)
    if isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw < len(names):
        return TraitValue(raw, names[raw])
    text = str(raw).strip()
    folded = {n.strip().lower(): i for i, n in enumerate(names)}
    index = folded.get(text.lower())
    if index is None:
        return TraitValue(INVALID_CLASS_INDEX, text)
    return TraitValue(index, names[index])
