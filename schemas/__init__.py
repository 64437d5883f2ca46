"""verifleet.schemas — the data model: benchmarks, rubrics, configuration, results
and scenarios. Imports only :mod:`verifleet.errors` and :mod:`verifleet.templates`
(the answer-template runtime: ``BaseAnswer``, ``VerifiedField``, the primitives,
compilation), whose names it does not re-export.

Each block below is owned by one module family; ``__all__`` is checked by a test.
"""

# --- errors -------------------------------------------------------------------
from ._errors import (
    BenchmarkLoadError,
    ConfigError,
    ExportError,
    RubricError,
    TemplateValidationError,
    UntrustedCodeError,
    VerifleetError,
)

# --- identity and keys ----------------------------------------------------------
from ._identity import ModelIdentity, compute_unit_key, md5_hex

# --- configuration --------------------------------------------------------------
from ._config import (
    DeepJudgmentTraitConfig,
    EvaluationMode,
    FewShotConfig,
    ModelConfig,
    PromptConfig,
    QuestionFewShotConfig,
    RetryPolicy,
    VerificationConfig,
    declare_interface,
    interface_names,
)
from ._config_compat import ConfigCompatibilityWarning, unwrap_preset
from ._result_limits import ResultLimits, json_size

# --- template identity (the template runtime itself is verifleet.templates) ------
from verifleet.templates import NO_TEMPLATE_ID, compute_template_id

# --- rubrics and benchmarks -----------------------------------------------------
from ._rubric import (
    ALLOWED_IMPORTS,
    VALID_METRICS,
    VALID_METRICS_FULL_MATRIX,
    VALID_METRICS_TP_ONLY,
    AgenticRubricTrait,
    AnyTrait,
    CallableTrait,
    DynamicRubric,
    LLMRubricTrait,
    MetricMode,
    MetricRubricTrait,
    RegexTrait,
    Rubric,
    TraitKind,
    compute_metrics,
    deduplicate_confusion,
    merge_dynamic_rubrics,
    merge_rubrics,
)
from ._benchmark import Benchmark, Question, dump_benchmark, load_benchmark

# --- multi-turn scenarios ---------------------------------------------------------
from ._scenario import (
    AllOfCheck,
    AnyOfCheck,
    AtLeastNCheck,
    Condition,
    CountTurns,
    END,
    FirstMatchIndex,
    OutcomeCheck,
    OutcomeCriterion,
    ResultCheck,
    ScenarioDefinition,
    ScenarioEdge,
    ScenarioExecutionError,
    ScenarioExecutionResult,
    ScenarioNode,
    ScenarioStatus,
    ScenarioTerminalFailure,
    ScenarioTurnRecord,
    StateUpdate,
    TurnCheck,
    TurnScope,
    resolve_path,
)

# --- where checks run template / trait code (the sandbox installs its own) -------
from ._checkers import CodeCheckers, check_callable_trait, check_template, use_code_checkers

# --- results, result set, views, aggregators -------------------------------------
from ._results import (
    AggregatorRegistry,
    JudgmentResults,
    RecordedError,
    ResultAggregator,
    RubricJudgmentResults,
    RubricResults,
    TemplateResults,
    TraitType,
    VerificationResult,
    VerificationResultDeepJudgment,
    VerificationResultDeepJudgmentRubric,
    VerificationResultMetadata,
    VerificationResultRubric,
    VerificationResultSet,
    VerificationResultTemplate,
    list_aggregators,
    register_aggregator,
)

__all__ = [
    "ALLOWED_IMPORTS",
    "END",
    "NO_TEMPLATE_ID",
    "VALID_METRICS",
    "VALID_METRICS_FULL_MATRIX",
    "VALID_METRICS_TP_ONLY",
    "AgenticRubricTrait",
    "AggregatorRegistry",
    "AllOfCheck",
    "AnyOfCheck",
    "AnyTrait",
    "AtLeastNCheck",
    "Benchmark",
    "BenchmarkLoadError",
    "CallableTrait",
    "CodeCheckers",
    "Condition",
    "ConfigCompatibilityWarning",
    "ConfigError",
    "CountTurns",
    "DeepJudgmentTraitConfig",
    "DynamicRubric",
    "EvaluationMode",
    "ExportError",
    "FewShotConfig",
    "FirstMatchIndex",
    "JudgmentResults",
    "LLMRubricTrait",
    "MetricMode",
    "MetricRubricTrait",
    "ModelConfig",
    "ModelIdentity",
    "OutcomeCheck",
    "OutcomeCriterion",
    "PromptConfig",
    "Question",
    "QuestionFewShotConfig",
    "RecordedError",
    "RegexTrait",
    "ResultAggregator",
    "ResultCheck",
    "ResultLimits",
    "RetryPolicy",
    "Rubric",
    "RubricError",
    "RubricJudgmentResults",
    "RubricResults",
    "ScenarioDefinition",
    "ScenarioEdge",
    "ScenarioExecutionError",
    "ScenarioExecutionResult",
    "ScenarioNode",
    "ScenarioStatus",
    "ScenarioTerminalFailure",
    "ScenarioTurnRecord",
    "StateUpdate",
    "TemplateResults",
    "TemplateValidationError",
    "TraitKind",
    "TraitType",
    "TurnCheck",
    "TurnScope",
    "UntrustedCodeError",
    "VerificationConfig",
    "VerificationResult",
    "VerificationResultDeepJudgment",
    "VerificationResultDeepJudgmentRubric",
    "VerificationResultMetadata",
    "VerificationResultRubric",
    "VerificationResultSet",
    "VerificationResultTemplate",
    "VerifleetError",
    "check_callable_trait",
    "check_template",
    "compute_metrics",
    "compute_template_id",
    "compute_unit_key",
    "declare_interface",
    "deduplicate_confusion",
    "dump_benchmark",
    "interface_names",
    "json_size",
    "list_aggregators",
    "load_benchmark",
    "md5_hex",
    "merge_dynamic_rubrics",
    "merge_rubrics",
    "register_aggregator",
    "resolve_path",
    "unwrap_preset",
    "use_code_checkers",
]
