"""Regex and callable traits: evaluated locally by the traits' own ``evaluate(text)``,
with no judge call.

Failure behaviour: a trait whose ``evaluate`` raises (a callable that crashes or
returns the wrong type, a refused untrusted callable) is left unscored and its
reason recorded; the other traits are unaffected. Nothing propagates.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .protocols import CallableTraitLike, RegexTraitLike

__all__ = [
    "CallableRunner",
    "LocalScores",
    "RegexRunner",
    "evaluate_callable_traits",
    "evaluate_regex_traits",
]

#: Runs one callable trait on a text and returns its checked value (the pipeline's
#: runs it in a sandbox executor).
CallableRunner = Callable[[CallableTraitLike, str], object]
#: Runs one regex trait on a text (the pipeline's runs it in a sandbox executor:
#: a backtracking pattern must not hang a worker thread).
RegexRunner = Callable[[RegexTraitLike, str], bool]

logger = logging.getLogger(__name__)


@dataclass
class LocalScores:
    """Scores of locally evaluated traits plus ``{name: reason}`` for failures."""

    scores: dict[str, object] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)


def evaluate_regex_traits(
    text: str, traits: Sequence[RegexTraitLike], *, run: RegexRunner | None = None
) -> LocalScores:
    """Match each regex trait against ``text`` (through ``run`` when given, else in
    this process); scores are booleans."""
    result = LocalScores()
    for trait in traits:
        try:
            result.scores[trait.name] = bool(
                run(trait, text) if run is not None else trait.evaluate(text)
            )
        except Exception as exc:  # a trait's own code; contain any failure to that trait
            _record_failure(result, "regex", trait.name, exc)
    return result


def evaluate_callable_traits(
    text: str, traits: Sequence[CallableTraitLike], *, run: CallableRunner | None = None
) -> LocalScores:
    """Run each callable trait on ``text`` (through ``run`` when given, else the
    trait's own ``evaluate`` in this process); scores are bool, int or float."""
    result = LocalScores()
    for trait in traits:
        try:
            value = run(trait, text) if run is not None else trait.evaluate(text)
        except Exception as exc:  # user-supplied code may raise anything
            _record_failure(result, "callable", trait.name, exc)
            continue
        if not isinstance(value, bool | int | float):
            _record_failure(
                result, "callable", trait.name, TypeError(f"returned {type(value).__name__}")
            )
            continue
        result.scores[trait.name] = value
    return result


def _record_failure(result: LocalScores, kind: str, name: str, exc: BaseException) -> None:
    logger.warning("%s trait '%s' failed: %s", kind, name, exc)
    result.failures[name] = f"{kind} trait failed: {exc}"
