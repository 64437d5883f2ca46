"""Rubric traits, rubrics, merging and metric computation (no LLM needed here).

Re-exported by :mod:`verifleet.schemas`; import from there.
"""

from ._callable import ALLOWED_IMPORTS, CallableTrait
from ._metrics import (
    VALID_METRICS,
    VALID_METRICS_FULL_MATRIX,
    VALID_METRICS_TP_ONLY,
    MetricMode,
    compute_metrics,
    deduplicate_confusion,
)
from ._rubric import AnyTrait, DynamicRubric, Rubric, merge_dynamic_rubrics, merge_rubrics
from ._traits import (
    AgenticRubricTrait,
    LLMRubricTrait,
    MetricRubricTrait,
    RegexTrait,
    TraitKind,
)

__all__ = [
    "ALLOWED_IMPORTS",
    "VALID_METRICS",
    "VALID_METRICS_FULL_MATRIX",
    "VALID_METRICS_TP_ONLY",
    "AgenticRubricTrait",
    "AnyTrait",
    "CallableTrait",
    "DynamicRubric",
    "LLMRubricTrait",
    "MetricMode",
    "MetricRubricTrait",
    "RegexTrait",
    "Rubric",
    "TraitKind",
    "compute_metrics",
    "deduplicate_confusion",
    "merge_dynamic_rubrics",
    "merge_rubrics",
]
