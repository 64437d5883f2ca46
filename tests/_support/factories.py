"""Small builders of real schema objects for tests (no fakes: these are the
actual models, filled with plausible values)."""

from __future__ import annotations

from verifleet.schemas import (
    ModelIdentity,
    VerificationResult,
    VerificationResultMetadata,
    VerificationResultTemplate,
)

__all__ = ["make_metadata", "make_result"]


def make_metadata(
    question_id: str = "q1",
    *,
    answering: ModelIdentity,
    parsing: ModelIdentity,
    replicate: int | None = 1,
    error: str | None = None,
    execution_time: float = 0.5,
    timestamp: str = "2026-01-01T00:00:00Z",
    template_id: str = "t",
    question_text: str = "?",
) -> VerificationResultMetadata:
    """A metadata section that completed unless ``error`` is given; its ``result_id``
    is derived from the question, models, timestamp and replicate.

    Raises:
        pydantic.ValidationError: a value the metadata model rejects.
    """
    return VerificationResultMetadata(
        question_id=question_id,
        template_id=template_id,
        question_text=question_text,
        answering=answering,
        parsing=parsing,
        replicate=replicate,
        completed_without_errors=error is None,
        error=error,
        execution_time=execution_time,
        timestamp=timestamp,
    )


def make_result(
    question_id: str = "q1",
    *,
    answering: str = "m-answer",
    parsing: str = "m-judge",
    replicate: int = 1,
    verified: bool | None = True,
    error: str | None = None,
) -> VerificationResult:
    """A template-mode result with the given verdict (or an error)."""
    meta = make_metadata(
        question_id,
        answering=ModelIdentity(interface="openai_endpoint", model_name=answering),
        parsing=ModelIdentity(interface="openai_endpoint", model_name=parsing),
        replicate=replicate,
        error=error,
        timestamp="2026-11-22T09:00:00+00:00",
        template_id="t" * 32,
        question_text=f"What is {question_id}?",
    )
    template = VerificationResultTemplate(
        raw_llm_response="an answer",
        verify_result=verified,
        template_verification_performed=verified is not None,
    )
    return VerificationResult(metadata=meta, template=template)
