"""verifleet.schemas — the data model: benchmarks, templates, rubrics, configuration
and results. Imports nothing else of verifleet.

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
)

# --- templates (BaseAnswer, VerifiedField, validation) --------------------------
# --- rubrics and benchmarks -----------------------------------------------------
# --- results, result set, views, aggregators -------------------------------------
from ._results import (
    AggregatorRegistry,
    JudgmentResults,
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
    "AggregatorRegistry",
    "BenchmarkLoadError",
    "ConfigError",
    "DeepJudgmentTraitConfig",
    "EvaluationMode",
    "ExportError",
    "FewShotConfig",
    "JudgmentResults",
    "ModelConfig",
    "ModelIdentity",
    "PromptConfig",
    "QuestionFewShotConfig",
    "ResultAggregator",
    "RetryPolicy",
    "RubricError",
    "RubricJudgmentResults",
    "RubricResults",
    "TemplateResults",
    "TemplateValidationError",
    "TraitType",
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
    "compute_unit_key",
    "list_aggregators",
    "md5_hex",
    "register_aggregator",
]
