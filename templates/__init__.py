"""verifleet.templates — the answer-template runtime: ``BaseAnswer``,
``VerifiedField`` and the verification primitives, composition, regex checks,
compilation under the interpreter-level guard, validation and the per-process cache.

What template authors import (``from verifleet.templates import BaseAnswer,
VerifiedField, NumericTolerance``; inside a template the wave-1 spelling
``verifleet.schemas`` and the original's ``karenina.schemas`` resolve to the same
names). Benchmark code runs only in the sandbox's executor processes
(:mod:`verifleet.sandbox`), which load this package; it imports nothing of
verifleet but :mod:`verifleet.errors`.
"""

from .base_answer import RESERVED_FIELD_NAMES, BaseAnswer
from .cache import TemplateCache, TemplateCacheStats, default_template_cache, load_answer_class
from .composition import (
    AllOf,
    AnyOf,
    AtLeastN,
    FieldCheck,
    StrategyNode,
    evaluate_strategy,
    granular_score,
    strategy_label,
)
from .dates import DateMatch, DateRange, DateTolerance
from .graded import NumericGraded, NumericRangeGraded, NumericThresholdGraded
from .judge import (
    build_answer,
    judge_field_names,
    judge_json_schema,
    parsed_ground_truth,
    parsed_llm_fields,
)
from .normalizers import Normalizer, SynonymMap, apply_normalizer, apply_normalizers
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
from .regex_checks import RegexOutcome, run_regex_checks
from .sequences import OrderedMatch, SetContainment
from .trace import TraceContains, TraceLength, TraceRegex
from .validation import COMPILE_LOCK as TEMPLATE_COMPILE_LOCK
from .validation import (
    NO_TEMPLATE_ID,
    compute_template_id,
    inject_question_id,
    source_digest,
    static_template_problem,
    validate_answer_template,
)
from .verified_field import VerificationMeta, VerifiedField

__all__ = [
    "NO_TEMPLATE_ID",
    "RESERVED_FIELD_NAMES",
    "TEMPLATE_COMPILE_LOCK",
    "AllOf",
    "AnyOf",
    "AtLeastN",
    "BaseAnswer",
    "BooleanMatch",
    "ContainsAll",
    "ContainsAny",
    "DateMatch",
    "DateRange",
    "DateTolerance",
    "ExactMatch",
    "FieldCheck",
    "LiteralMatch",
    "Normalizer",
    "NumericExact",
    "NumericGraded",
    "NumericMaximum",
    "NumericMinimum",
    "NumericRange",
    "NumericRangeGraded",
    "NumericThresholdGraded",
    "NumericTolerance",
    "OrderedMatch",
    "RegexMatch",
    "RegexOutcome",
    "SemanticMatch",
    "SetContainment",
    "StrategyNode",
    "SynonymMap",
    "TemplateCache",
    "TemplateCacheStats",
    "TraceContains",
    "TraceLength",
    "TracePrimitive",
    "TraceRegex",
    "VerificationMeta",
    "VerificationPrimitive",
    "VerifiedField",
    "apply_normalizer",
    "apply_normalizers",
    "build_answer",
    "compute_template_id",
    "default_template_cache",
    "evaluate_strategy",
    "granular_score",
    "inject_question_id",
    "judge_field_names",
    "judge_json_schema",
    "load_answer_class",
    "parsed_ground_truth",
    "parsed_llm_fields",
    "run_regex_checks",
    "source_digest",
    "static_template_problem",
    "strategy_label",
    "validate_answer_template",
]
