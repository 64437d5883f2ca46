"""Rubric evaluation (pipeline stage 11) and the data stage 12 acts on.

:func:`evaluate_rubric` is the entry point; it returns a :class:`RubricOutcome`
holding the result's ``rubric`` and ``deep_judgment_rubric`` sections.
"""

from .dj_settings import DeepJudgmentSettings, resolve_deep_judgment
from .evaluate import evaluate_rubric
from .excerpts import excerpt_similarity
from .outcome import RubricOutcome
from .values import INVALID_CLASS_INDEX, coerce_trait_value

__all__ = [
    "INVALID_CLASS_INDEX",
    "DeepJudgmentSettings",
    "RubricOutcome",
    "coerce_trait_value",
    "evaluate_rubric",
    "excerpt_similarity",
    "resolve_deep_judgment",
]
