"""A rubric's traits grouped by how they are evaluated.

Static rubrics, promoted dynamic traits and the ``rubric_trait_names`` filter all
meet here, so the evaluators never need to build new ``Rubric`` objects.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from verifleet.schemas import DynamicRubric, Rubric

from .protocols import CallableTraitLike, LLMTraitLike, MetricTraitLike, RegexTraitLike

__all__ = ["TraitSet"]


@dataclass
class TraitSet:
    """Traits by type, in rubric order."""

    llm: list[LLMTraitLike] = field(default_factory=list)
    regex: list[RegexTraitLike] = field(default_factory=list)
    callable: list[CallableTraitLike] = field(default_factory=list)
    metric: list[MetricTraitLike] = field(default_factory=list)
    agentic: list[Any] = field(default_factory=list)

    @classmethod
    def of(cls, rubric: Rubric | DynamicRubric | None) -> TraitSet:
        """The traits of a ``Rubric`` or ``DynamicRubric`` (None: no traits)."""
        if rubric is None:
            return cls()
        return cls(
            llm=list(rubric.llm_traits),
            regex=list(rubric.regex_traits),
            callable=list(rubric.callable_traits),
            metric=list(rubric.metric_traits),
            agentic=list(rubric.agentic_traits),
        )

    def groups(self) -> list[list[Any]]:
        """The five type lists: llm, regex, callable, metric, agentic."""
        return [self.llm, self.regex, self.callable, self.metric, self.agentic]

    def traits(self) -> list[Any]:
        """Every trait, in type order."""
        return [t for group in self.groups() for t in group]

    def names(self) -> list[str]:
        """Every trait name, in type order (llm, regex, callable, metric, agentic)."""
        return [t.name for t in self.traits()]

    def is_empty(self) -> bool:
        """True when there is no trait at all."""
        return not any(self.groups())

    def only(self, names: Iterable[str] | None) -> TraitSet:
        """The traits whose name is in ``names`` (all of them when ``names`` is None)."""
        if names is None:
            return TraitSet(*[list(g) for g in self.groups()])
        keep = set(names)
        return TraitSet(*[[t for t in g if t.name in keep] for g in self.groups()])

    def without_agentic(self) -> TraitSet:
        """A copy without agentic traits."""
        return TraitSet(list(self.llm), list(self.regex), list(self.callable), list(self.metric))

    def merged(self, other: TraitSet) -> TraitSet:
        """This set followed by ``other``, type by type."""
        return TraitSet(*[a + b for a, b in zip(self.groups(), other.groups(), strict=True)])
