"""The registry of verification primitives: the one list every place that names
them reads (templates' import names, scenario conditions' ``verify_with``).

A primitive defined in this package and missing here fails
``tests/unit/test_registries.py``.
"""

from __future__ import annotations

from .dates import DateMatch, DateRange, DateTolerance
from .graded import NumericGraded, NumericRangeGraded, NumericThresholdGraded
from .numeric import NumericExact, NumericMaximum, NumericMinimum, NumericRange, NumericTolerance
from .primitives import (
    BooleanMatch,
    ContainsAll,
    ContainsAny,
    ExactMatch,
    LiteralMatch,
    RegexMatch,
    SemanticMatch,
    TracePrimitive,
    VerificationPrimitive,
)
from .sequences import OrderedMatch, SetContainment
from .trace import TraceContains, TraceLength, TraceRegex

__all__ = ["CONDITION_PRIMITIVES", "PRIMITIVES", "TRACE_PRIMITIVES", "by_name"]

#: Primitives that compare one parsed value with the expected one.
PRIMITIVES: tuple[type[VerificationPrimitive], ...] = (
    BooleanMatch,
    ContainsAll,
    ContainsAny,
    DateMatch,
    DateRange,
    DateTolerance,
    ExactMatch,
    LiteralMatch,
    NumericExact,
    NumericGraded,
    NumericMaximum,
    NumericMinimum,
    NumericRange,
    NumericRangeGraded,
    NumericThresholdGraded,
    NumericTolerance,
    OrderedMatch,
    RegexMatch,
    SemanticMatch,
    SetContainment,
)

#: Primitives over the answering model's trace (tool calls, messages).
TRACE_PRIMITIVES: tuple[type[TracePrimitive], ...] = (TraceContains, TraceLength, TraceRegex)

#: The primitives a scenario condition may name: all value primitives but
#: SemanticMatch, which loads an embedding model (routing between turns never should).
CONDITION_PRIMITIVES: tuple[type[VerificationPrimitive], ...] = tuple(
    cls for cls in PRIMITIVES if cls is not SemanticMatch
)


def by_name(
    primitives: tuple[type[VerificationPrimitive], ...],
) -> dict[str, type[VerificationPrimitive]]:
    """``primitives`` by class name (the name a checkpoint or a file gives)."""
    return {cls.__name__: cls for cls in primitives}
