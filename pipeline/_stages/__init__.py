"""The 13 pipeline stages, one module each, in the spec's order."""

from ._common import evaluation_text
from .validate_template import ValidateTemplateStage
from .generate_answer import GenerateAnswerStage
from .recursion_limit_autofail import RecursionLimitAutoFailStage
from .trace_validation_autofail import TraceValidationAutoFailStage
from .abstention_check import AbstentionCheckStage
from .sufficiency_check import SufficiencyCheckStage
from .parse_template import ParseTemplateStage
from .verify_template import VerifyTemplateStage
from .embedding_check import EmbeddingCheckStage
from .deep_judgment_autofail import DeepJudgmentAutoFailStage
from .rubric_evaluation import RubricEvaluationStage
from .deep_judgment_rubric_autofail import DeepJudgmentRubricAutoFailStage
from .finalize_result import FinalizeResultStage

from .._stage import Stage

__all__ = [
    "AbstentionCheckStage",
    "DeepJudgmentAutoFailStage",
    "DeepJudgmentRubricAutoFailStage",
    "EmbeddingCheckStage",
    "FinalizeResultStage",
    "GenerateAnswerStage",
    "ParseTemplateStage",
    "RecursionLimitAutoFailStage",
    "RubricEvaluationStage",
    "SufficiencyCheckStage",
    "TraceValidationAutoFailStage",
    "ValidateTemplateStage",
    "VerifyTemplateStage",
    "all_stages",
    "evaluation_text",
]


def all_stages() -> list[Stage]:
    """A fresh instance of every stage, in execution order (stages are stateless,
    but fresh instances keep tests independent)."""
    return [
        ValidateTemplateStage(),
        GenerateAnswerStage(),
        RecursionLimitAutoFailStage(),
        TraceValidationAutoFailStage(),
        AbstentionCheckStage(),
        SufficiencyCheckStage(),
        ParseTemplateStage(),
        VerifyTemplateStage(),
        EmbeddingCheckStage(),
        DeepJudgmentAutoFailStage(),
        RubricEvaluationStage(),
        DeepJudgmentRubricAutoFailStage(),
        FinalizeResultStage(),
    ]
