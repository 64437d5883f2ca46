"""Result data model, result set, views, DataFrame builders and aggregators."""

from .aggregators import (
    AggregatorRegistry,
    CountAggregator,
    FirstAggregator,
    MajorityVoteAggregator,
    MeanAggregator,
    MedianAggregator,
    ModeAggregator,
    ResultAggregator,
    list_aggregators,
    register_aggregator,
)
from .failure import CATEGORY_GROUPS, ResultFailure, classify_failure, collect_caveats
from .fingerprint import (
    FINGERPRINT_PARTS,
    MODEL_FIELDS_NOT_IN_REPLY,
    ResultFingerprint,
    compute_fingerprint,
    digest_of,
    verifleet_version,
)
from .calls import TRUNCATION_MARK, ModelCall, bound_calls
from .cost import CostSummary, ModelCost
from .deep_judgment import VerificationResultDeepJudgment, VerificationResultDeepJudgmentRubric
from .frames_judgment import JUDGMENT_COLUMNS, RUBRIC_JUDGMENT_COLUMNS
from .frames_rubric import RUBRIC_COLUMNS, RUBRIC_DEEP_JUDGMENT_COLUMNS, RubricFrameType
from .frames_template import TEMPLATE_FIELD_COLUMNS, TEMPLATE_REGEX_COLUMNS, TEMPLATE_USAGE_COLUMNS
from .judgment_view import JudgmentResults, RubricJudgmentResults
from .metadata import VerificationResultMetadata
from .result import VerificationResult
from .result_set import RecordedError, VerificationResultSet
from .rubric import TraitType, VerificationResultRubric, numeric_trait_scores, result_trait_scores
from .rubric_view import RubricResults
from .template import VerificationResultTemplate
from .template_view import TemplateResults
from .view_base import ResultView

__all__ = [
    "CATEGORY_GROUPS",
    "FINGERPRINT_PARTS",
    "JUDGMENT_COLUMNS",
    "MODEL_FIELDS_NOT_IN_REPLY",
    "RUBRIC_COLUMNS",
    "RUBRIC_DEEP_JUDGMENT_COLUMNS",
    "RUBRIC_JUDGMENT_COLUMNS",
    "TEMPLATE_FIELD_COLUMNS",
    "TEMPLATE_REGEX_COLUMNS",
    "TEMPLATE_USAGE_COLUMNS",
    "TRUNCATION_MARK",
    "AggregatorRegistry",
    "CostSummary",
    "CountAggregator",
    "FirstAggregator",
    "JudgmentResults",
    "MajorityVoteAggregator",
    "MeanAggregator",
    "MedianAggregator",
    "ModeAggregator",
    "ModelCall",
    "ModelCost",
    "RecordedError",
    "ResultAggregator",
    "ResultFailure",
    "ResultFingerprint",
    "ResultView",
    "RubricFrameType",
    "RubricJudgmentResults",
    "RubricResults",
    "TemplateResults",
    "TraitType",
    "VerificationResult",
    "VerificationResultDeepJudgment",
    "VerificationResultDeepJudgmentRubric",
    "VerificationResultMetadata",
    "VerificationResultRubric",
    "VerificationResultSet",
    "VerificationResultTemplate",
    "bound_calls",
    "classify_failure",
    "collect_caveats",
    "compute_fingerprint",
    "digest_of",
    "list_aggregators",
    "numeric_trait_scores",
    "register_aggregator",
    "result_trait_scores",
    "verifleet_version",
]
