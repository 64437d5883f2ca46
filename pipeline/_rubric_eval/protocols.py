"""The trait shapes rubric evaluation reads.

The evaluators depend on these structural protocols instead of the concrete trait
classes of :mod:`verifleet.schemas`, so they only need the attributes they read and
work for static and dynamic rubrics alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

__all__ = [
    "CallableTraitLike",
    "LLMTraitLike",
    "MetricTraitLike",
    "NamedTrait",
    "RegexTraitLike",
    "class_descriptions",
    "class_names",
]


class NamedTrait(Protocol):
    """Any trait: a name plus the texts that describe its concept."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str | None: ...


class LLMTraitLike(NamedTrait, Protocol):
    """An LLM-judged trait of kind ``boolean``, ``score`` or ``literal``."""

    @property
    def kind(self) -> object: ...

    @property
    def min_score(self) -> int | None: ...

    @property
    def max_score(self) -> int | None: ...

    @property
    def classes(self) -> Sequence[str] | Mapping[str, str] | None: ...

    @property
    def deep_judgment_enabled(self) -> bool: ...

    @property
    def deep_judgment_excerpt_enabled(self) -> bool: ...

    @property
    def deep_judgment_max_excerpts(self) -> int | None: ...

    @property
    def deep_judgment_fuzzy_match_threshold(self) -> float | None: ...

    @property
    def deep_judgment_excerpt_retry_attempts(self) -> int | None: ...

    @property
    def deep_judgment_search_enabled(self) -> bool: ...


class RegexTraitLike(Protocol):
    """A regex trait, evaluated locally."""

    @property
    def name(self) -> str: ...

    def evaluate(self, text: str) -> bool: ...


class CallableTraitLike(Protocol):
    """A callable trait, evaluated locally."""

    @property
    def name(self) -> str: ...

    def evaluate(self, text: str) -> object: ...


class MetricTraitLike(NamedTrait, Protocol):
    """A metric trait: the judge sorts instructions into confusion buckets."""

    @property
    def evaluation_mode(self) -> str: ...

    @property
    def metrics(self) -> Sequence[str]: ...

    @property
    def tp_instructions(self) -> Sequence[str]: ...

    @property
    def tn_instructions(self) -> Sequence[str]: ...

    @property
    def repeated_extraction(self) -> bool: ...


def class_names(trait: LLMTraitLike) -> list[str]:
    """The class names of a literal trait, in index order (empty for other kinds).

    ``classes`` may be a list of names or a ``{name: description}`` mapping; both
    keep their order, which defines the class indices.
    """
    classes = trait.classes
    if not classes:
        return []
    return list(classes.keys()) if isinstance(classes, Mapping) else list(classes)


def class_descriptions(trait: LLMTraitLike) -> dict[str, str]:
    """``{class name: description}`` of a literal trait, in index order.

    Descriptions come from a ``classes`` mapping or from the trait's
    ``class_descriptions``; a class without one maps to ``""``.
    """
    classes = trait.classes
    if isinstance(classes, Mapping):
        return {str(k): str(v) for k, v in classes.items()}
    known = getattr(trait, "class_descriptions", None) or {}
    return {name: str(known.get(name, "")) for name in class_names(trait)}
