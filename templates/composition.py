"""Composition strategies: how per-field results combine into ``verify()``.

A template opts in with an inner class::

    class VerificationStrategy:
        verify_strategy = AnyOf(conditions=[FieldCheck(field="a"), FieldCheck(field="b")])

Nodes nest (``AllOf`` inside ``AnyOf``...). Without a strategy every verified field
must pass (an implicit ``AllOf``).

Partial credit (``verify_granular``) follows the spec, over *all* verified fields'
weights: ``AllOf`` (and no strategy) = passing weight / total weight; ``AnyOf`` =
best single passing weight / total; ``AtLeastN`` = the N largest passing weights /
total. A field "earns" its weight times its score: 1 or 0 for ordinary primitives,
a fraction for graded ones (``NumericGraded``...).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AllOf",
    "AnyOf",
    "AtLeastN",
    "FieldCheck",
    "StrategyNode",
    "evaluate_strategy",
    "granular_score",
    "strategy_fields",
    "strategy_label",
]


class FieldCheck(BaseModel):
    """Leaf: passes when the named field's primitive check passed."""

    model_config = ConfigDict(frozen=True)

    type: Literal["field_check"] = "field_check"
    field: str


class AllOf(BaseModel):
    """Passes when every condition passes (an empty list passes)."""

    type: Literal["all_of"] = "all_of"
    conditions: list[StrategyNode] = Field(default_factory=list)


class AnyOf(BaseModel):
    """Passes when at least one condition passes (an empty list fails)."""

    type: Literal["any_of"] = "any_of"
    conditions: list[StrategyNode] = Field(default_factory=list)


class AtLeastN(BaseModel):
    """Passes when at least ``n`` conditions pass."""

    type: Literal["at_least_n"] = "at_least_n"
    n: int = Field(ge=0)
    conditions: list[StrategyNode] = Field(default_factory=list)


StrategyNode = Annotated[FieldCheck | AllOf | AnyOf | AtLeastN, Field(discriminator="type")]

AllOf.model_rebuild()
AnyOf.model_rebuild()
AtLeastN.model_rebuild()


def evaluate_strategy(node: StrategyNode, field_results: Mapping[str, bool | None]) -> bool:
    """Evaluate a strategy tree; a field whose result is not exactly True fails.

    Raises:
        KeyError: A ``FieldCheck`` names a field missing from ``field_results``.
    """
    if isinstance(node, FieldCheck):
        return field_results[node.field] is True
    outcomes = [evaluate_strategy(child, field_results) for child in node.conditions]
    if isinstance(node, AllOf):
        return all(outcomes)
    if isinstance(node, AnyOf):
        return any(outcomes)
    return sum(outcomes) >= node.n


def strategy_fields(node: StrategyNode) -> Iterator[str]:
    """Every field name a strategy tree refers to (depth first, repeats kept)."""
    if isinstance(node, FieldCheck):
        yield node.field
        return
    for child in node.conditions:
        yield from strategy_fields(child)


def strategy_label(node: StrategyNode | None) -> str | None:
    """``"all_of"``, ``"any_of"``, ``"at_least_n(N)"`` for the root node, else None."""
    if isinstance(node, AtLeastN):
        return f"at_least_n({node.n})"
    if isinstance(node, AllOf | AnyOf):
        return node.type
    return None


def _as_score(value: bool | float | None) -> float:
    if value is None or value is False:
        return 0.0
    if value is True:
        return 1.0
    return min(1.0, max(0.0, float(value)))


def granular_score(
    node: StrategyNode | None,
    field_scores: Mapping[str, bool | float | None],
    weights: Mapping[str, float],
) -> float:
    """Partial credit in [0, 1] under the root node's rule (see module docstring).

    ``field_scores`` holds per-field pass/fail (True = 1.0) or graded scores.
    Fields without a weight count 1.0. A total weight of 0 scores 0.0.
    """
    total = sum(weights.get(name, 1.0) for name in field_scores)
    if total <= 0.0:
        return 0.0
    earned = sorted(
        (weights.get(name, 1.0) * _as_score(score) for name, score in field_scores.items()),
        reverse=True,
    )
    if isinstance(node, AnyOf):
        gained = earned[0] if earned else 0.0
    elif isinstance(node, AtLeastN):
        gained = sum(earned[: node.n])
    else:
        gained = sum(earned)
    return min(1.0, gained / total)
