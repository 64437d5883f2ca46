"""Small builders of real schema objects for tests (no fakes: these are the
actual models, filled with plausible values)."""

from __future__ import annotations

from verifleet.schemas import (
    ModelIdentity,
    VerificationResult,
    VerificationResultMetadata,
    VerificationResultTemplate,
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
    a = ModelIdentity(interface="openai_endpoint", model_name=answering)
    p = ModelIdentity(interface="openai_endpoint", model_name=parsing)
    ts = "2026-11-22T09:00:00+00:00"
    meta = VerificationResultMetadata(
        question_id=question_id,
        template_id="t" * 32,
        question_text=f"What is {question_id}?",
        answering=a,
        parsing=p,
        replicate=replicate,
        completed_without_errors=error is None,
        error=error,
        execution_time=0.5,
        timestamp=ts,
        result_id=VerificationResultMetadata.compute_result_id(
            question_id=question_id, answering=a, parsing=p, timestamp=ts, replicate=replicate
        ),
    )
    template = VerificationResultTemplate(
        raw_llm_response="an answer",
        verify_result=verified,
        template_verification_performed=verified is not None,
    )
    return VerificationResult(metadata=meta, template=template)
