"""The original framework's failure taxonomy: why a result did not pass.

``metadata.failure`` names one category (``content``, ``recursion_limit``,
``timeout``, ``connection``, ``parsing``, ...), the stage and a reason;
``metadata.caveats`` lists non-fatal observations. The frames' ``success``,
``failure_*`` and ``caveats`` columns read them. verifleet's pipeline fills both
with :func:`classify_failure` and :func:`collect_caveats`; a result read from the
original's files keeps what the original wrote.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

if TYPE_CHECKING:
    from .result import VerificationResult

__all__ = [
    "CATEGORY_GROUPS",
    "FailureCategory",
    "FailureGroup",
    "ResultFailure",
    "classify_failure",
    "collect_caveats",
]

FailureCategory = Literal[
    "content",
    "recursion_limit",
    "trace_validation",
    "deep_judgment",
    "deep_judgment_rubric",
    "timeout",
    "connection",
    "rate_limit",
    "server_error",
    "abstention",
    "sufficiency",
    "template_validation",
    "parsing",
    "unexpected_error",
]
FailureGroup = Literal["content", "autofail", "retry", "abstained", "system"]

CATEGORY_GROUPS: dict[str, FailureGroup] = {
    "content": "content",
    "recursion_limit": "autofail",
    "trace_validation": "autofail",
    "deep_judgment": "autofail",
    "deep_judgment_rubric": "autofail",
    "timeout": "retry",
    "connection": "retry",
    "rate_limit": "retry",
    "server_error": "retry",
    "abstention": "abstained",
    "sufficiency": "abstained",
    "template_validation": "system",
    "parsing": "system",
    "unexpected_error": "system",
}
"""Each category's group, as the original maps them."""


class ResultFailure(BaseModel):
    """A structured non-pass verdict: the original's ``Failure``.

    ``group`` is derived from ``category`` (a stored ``group`` is ignored, as the
    original ignores it).

    Raises:
        pydantic.ValidationError: an unknown category or field.
    """

    model_config = ConfigDict(extra="forbid")

    category: FailureCategory
    stage: str
    reason: str = Field(max_length=500)
    details: dict[str, object] | None = None

    @model_validator(mode="before")
    @classmethod
    def _drop_group(cls, data: object) -> object:
        if isinstance(data, dict) and "group" in data:
            return {k: v for k, v in data.items() if k != "group"}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def group(self) -> FailureGroup:
        """The category's group (``content``, ``autofail``, ``retry``, ...)."""
        return CATEGORY_GROUPS[self.category]


_AUTOFAIL_STAGES = {
    "recursion_limit": "RecursionLimitAutoFail",
    "trace_validation": "TraceValidationAutoFail",
    "deep_judgment": "DeepJudgmentAutoFail",
    "deep_judgment_rubric": "DeepJudgmentRubricAutoFail",
}

# verifleet's error texts are "<stage label>: <cause>"; the cause of a model call
# that ran out of retries says what failed ("429 Too Many Requests after 4 attempts").
_RETRY_CAUSES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"timed out|deadline exceeded|would pass the unit deadline"), "timeout"),
    (re.compile(r"\b429\b"), "rate_limit"),
    (re.compile(r"\b5\d\d\b.* after \d+ attempts?"), "server_error"),
    (re.compile(r"connection error"), "connection"),
)
_STAGE_LABELS = {
    "answer generation failed": "generate_answer",
    "template validation failed": "validate_template",
    "parsing failed": "parse_template",
    "verification failed": "verify_template",
    "abstention check failed": "abstention_check",
    "sufficiency check failed": "sufficiency_check",
    "embedding check failed": "embedding_check",
    "rubric evaluation failed": "rubric_evaluation",
}


def _trim(text: str | None) -> str:
    return (text or "").strip()[:500]


def _autofail(result: VerificationResult) -> str | None:
    """Which auto-fail decided the verdict (the first in pipeline order)."""
    template = result.template
    if template is None or template.verify_result is not False:
        return None
    if template.recursion_limit_reached:
        return "recursion_limit"
    if (
        template.answering_mcp_servers
        and result.trace_extraction_error
        and template.parsed_llm_response is None
        and not result.metadata.error
    ):
        return "trace_validation"
    judgment = result.deep_judgment
    if (
        judgment is not None
        and judgment.deep_judgment_performed
        and judgment.attributes_without_excerpts
        and not template.abstention_detected
    ):
        return "deep_judgment"
    rubric_judgment = result.deep_judgment_rubric
    if rubric_judgment is not None and rubric_judgment.traits_without_valid_excerpts:
        return "deep_judgment_rubric"
    return None


def _error_failure(error: str) -> ResultFailure:
    label, _, cause = error.partition(": ")
    stage = _STAGE_LABELS.get(label, "unknown")
    details = {"error_message": error}
    for pattern, category in _RETRY_CAUSES:
        if pattern.search(cause):
            return ResultFailure(
                category=category,
                stage=stage,
                reason=f"{category} retries exhausted",
                details=details,
            )
    if stage == "validate_template":
        return ResultFailure(category="template_validation", stage=stage, reason=_trim(cause))
    if stage == "parse_template":
        return ResultFailure(
            category="parsing", stage=stage, reason=_trim(cause) or "parse failed", details=details
        )
    return ResultFailure(
        category="unexpected_error",
        stage=stage,
        reason=_trim(error) or "unexpected error",
        details=details,
    )


def classify_failure(result: VerificationResult) -> ResultFailure | None:
    """The failure of ``result``, by the original's rules and in their order.

    Auto-fails first (recursion limit, trace validation, deep judgment of
    attributes or of rubric traits), then a template that verified False
    (``content``), a model call that ran out of retries (``timeout``,
    ``connection``, ``rate_limit``, ``server_error``), abstention or an
    insufficient response, a template that failed validation, parsing, and any
    other error (``unexpected_error``). None when the result passed. One
    difference: the original also reports ``sufficiency`` for a response judged
    *sufficient* whose template verification did not fail (its check reads the
    flag, not the verdict); here only an insufficient response is a failure.
    Never raises.
    """
    template = result.template
    autofail = _autofail(result)
    if autofail is not None:
        stage = _AUTOFAIL_STAGES[autofail]
        return ResultFailure(
            category=autofail,
            stage=stage,
            reason=f"auto-fail at stage {stage}",
        )
    meta = result.metadata
    if template is not None and template.verify_result is False:
        if template.abstention_override_applied:
            return ResultFailure(
                category="abstention",
                stage="abstention_check",
                reason=_trim(template.abstention_reasoning) or "model abstained",
            )
        if template.sufficiency_override_applied:
            return ResultFailure(
                category="sufficiency",
                stage="sufficiency_check",
                reason=_trim(template.sufficiency_reasoning) or "insufficient response",
            )
        if template.template_verification_performed:
            return ResultFailure(
                category="content",
                stage="verify_template",
                reason="verify_template returned False",
            )
    if template is not None and template.abstention_detected:
        return ResultFailure(
            category="abstention",
            stage="abstention_check",
            reason=_trim(template.abstention_reasoning) or "model abstained",
        )
    if template is not None and template.sufficiency_detected is False:
        return ResultFailure(
            category="sufficiency",
            stage="sufficiency_check",
            reason=_trim(template.sufficiency_reasoning) or "insufficient response",
        )
    if template is not None and template.template_validation_error:
        return ResultFailure(
            category="template_validation",
            stage="validate_template",
            reason=_trim(template.template_validation_error),
        )
    if meta.error:
        return _error_failure(meta.error)
    return None


def collect_caveats(result: VerificationResult) -> list[str]:
    """The original's caveats that verifleet can observe: ``embedding_override``
    when the embedding check overturned the verdict. (``partial_content``,
    ``retries_used`` and ``parse_decision_malformed`` come from features
    verifleet does not have or does not record per result.) Never raises."""
    template = result.template
    if template is not None and template.embedding_override_applied:
        return ["embedding_override"]
    return []
