"""One verification result: metadata plus the optional evaluation sections."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from .deep_judgment import VerificationResultDeepJudgment, VerificationResultDeepJudgmentRubric
from .metadata import VerificationResultMetadata
from .rubric import VerificationResultRubric
from .template import VerificationResultTemplate

__all__ = ["VerificationResult"]


class VerificationResult(BaseModel):
    """The complete evidence record of one (question, answering, parsing, replicate).

    Fields are reached only through their section (``result.metadata.question_id``);
    there are no flat accessors, so ``result.question_id`` raises AttributeError.
    The result round-trips exactly through ``model_dump(mode="json")`` and
    ``model_validate``.

    Example:
        >>> VerificationResult(metadata=meta, template=VerificationResultTemplate(
        ...     raw_llm_response="BCL2", verify_result=True))

    Raises:
        pydantic.ValidationError: a section is malformed or has unknown fields.
    """

    model_config = ConfigDict(extra="forbid")

    metadata: VerificationResultMetadata
    template: VerificationResultTemplate | None = None
    rubric: VerificationResultRubric | None = None
    deep_judgment: VerificationResultDeepJudgment | None = None
    deep_judgment_rubric: VerificationResultDeepJudgmentRubric | None = None

    # Shared by template and rubric evaluation, hence at the root
    evaluation_input: str | None = None
    used_full_trace: bool = True
    trace_extraction_error: str | None = None
