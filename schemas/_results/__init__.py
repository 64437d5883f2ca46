"""Result data model, result set, views, DataFrame builders and aggregators."""

from .deep_judgment import VerificationResultDeepJudgment, VerificationResultDeepJudgmentRubric
from .metadata import VerificationResultMetadata
from .result import VerificationResult
from .rubric import TraitType, VerificationResultRubric
from .template import VerificationResultTemplate

__all__ = [
    "TraitType",
    "VerificationResult",
    "VerificationResultDeepJudgment",
    "VerificationResultDeepJudgmentRubric",
    "VerificationResultMetadata",
    "VerificationResultRubric",
    "VerificationResultTemplate",
]
