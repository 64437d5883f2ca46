"""The names templates written for the original framework import.

``from karenina.schemas.entities import BaseAnswer, VerifiedField, ExactMatch``
(and the older ``karenina.schemas.domain`` / ``karenina.schemas.answer_class``
paths) resolve to verifleet's own classes: every alias module exposes the same
set of names below.
"""

from __future__ import annotations

from typing import Any, TypeVar

from .base_answer import BaseAnswer
from .composition import AllOf, AnyOf, AtLeastN, FieldCheck, evaluate_strategy
from .normalizers import Normalizer, SynonymMap, apply_normalizer, apply_normalizers
from .primitives import TracePrimitive, VerificationPrimitive
from .registry import PRIMITIVES, TRACE_PRIMITIVES
from .verified_field import VerificationMeta, VerifiedField

__all__ = ["KARENINA_ALIAS_MODULES", "KARENINA_NAMES", "capture_answer_source"]

_T = TypeVar("_T")


def capture_answer_source(answer_class: _T) -> _T:
    """No-op stand-in for the original notebook helper: verifleet keeps the template
    source itself."""
    return answer_class


#: Module paths templates import from: the original package's, and verifleet's own
#: public path (``from verifleet.templates import BaseAnswer, VerifiedField``; the
#: wave-1 spelling ``verifleet.schemas`` still works), which
#: inside a template resolves to the same restricted set of names.
KARENINA_ALIAS_MODULES: frozenset[str] = frozenset(
    {
        "verifleet",
        "verifleet.schemas",
        "verifleet.templates",
        "karenina",
        "karenina.schemas",
        "karenina.schemas.answer_class",
        "karenina.schemas.domain",
        "karenina.schemas.domain.answer",
        "karenina.schemas.entities",
        "karenina.schemas.entities.answer",
        "karenina.schemas.entities.composition",
        "karenina.schemas.entities.normalizers",
        "karenina.schemas.entities.primitives",
        "karenina.schemas.entities.verified_field",
        "karenina.schemas.primitives",
        "karenina.schemas.primitives.comparisons",
        "karenina.schemas.primitives.composition",
        "karenina.schemas.primitives.normalizers",
        "karenina.schemas.primitives.trace",
    }
)

#: What every alias module exposes: every registered primitive
#: (:mod:`verifleet.templates.registry`) and the rest of the template runtime.
_EXPOSED: tuple[Any, ...] = (
    *PRIMITIVES,
    *TRACE_PRIMITIVES,
    AllOf,
    AnyOf,
    AtLeastN,
    BaseAnswer,
    FieldCheck,
    SynonymMap,
    TracePrimitive,
    VerificationMeta,
    VerificationPrimitive,
    VerifiedField,
    apply_normalizer,
    apply_normalizers,
    capture_answer_source,
    evaluate_strategy,
)
KARENINA_NAMES: dict[str, object] = {obj.__name__: obj for obj in _EXPOSED}
KARENINA_NAMES["Normalizer"] = Normalizer
