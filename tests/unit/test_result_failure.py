"""The original's failure taxonomy from verifleet's results: each error text the
pipeline writes maps to the category the original's classifier gives it."""

from __future__ import annotations

import pytest

from verifleet.schemas import (
    ModelIdentity,
    VerificationResult,
    VerificationResultMetadata,
    VerificationResultTemplate,
    classify_failure,
    collect_caveats,
)


def _result(error: str | None = None, **template: object) -> VerificationResult:
    return VerificationResult(
        metadata=VerificationResultMetadata(
            question_id="q",
            template_id="t",
            question_text="Q?",
            answering=ModelIdentity(model_name="a"),
            parsing=ModelIdentity(model_name="j"),
            completed_without_errors=error is None,
            error=error,
            execution_time=0.1,
            timestamp="2026-01-01T00:00:00",
        ),
        template=VerificationResultTemplate.model_validate(template),
    )


@pytest.mark.parametrize(
    ("error", "category", "group", "stage"),
    [
        ("answer generation failed: request timed out after 4 attempts", "timeout", "retry", "generate_answer"),
        ("parsing failed: 429 Too Many Requests after 4 attempts", "rate_limit", "retry", "parse_template"),
        ("answer generation failed: 503 Service Unavailable after 2 attempts", "server_error", "retry", "generate_answer"),
        ("answer generation failed: connection error (ConnectError: refused) after 1 attempt", "connection", "retry", "generate_answer"),
        ("parsing failed: the judge never returned valid JSON", "parsing", "system", "parse_template"),
        ("answer generation failed: 400 Bad Request: unknown model", "unexpected_error", "system", "generate_answer"),
    ],
)  # fmt: skip
def test_errors_map_to_the_originals_categories(
    error: str, category: str, group: str, stage: str
) -> None:
    failure = classify_failure(_result(error))
    assert failure is not None
    assert (failure.category, failure.group, failure.stage) == (category, group, stage)
    if group == "retry":
        assert failure.reason == f"{category} retries exhausted"
        assert failure.details == {"error_message": error}


def test_verdicts_map_to_content_template_validation_or_a_pass() -> None:
    content = classify_failure(_result(template_verification_performed=True, verify_result=False))
    assert content is not None and (content.category, content.stage) == (
        "content",
        "verify_template",
    )
    broken = classify_failure(
        _result(
            "template validation failed: no Answer class",
            template_validation_error="no Answer class",
        )
    )
    assert broken is not None and broken.category == "template_validation"
    assert broken.reason == "no Answer class"
    assert (
        classify_failure(_result(template_verification_performed=True, verify_result=True)) is None
    )
    # A sufficient response is no failure (the original's classifier says otherwise).
    assert classify_failure(_result(verify_result=True, sufficiency_detected=True)) is None


def test_caveats_name_an_embedding_override() -> None:
    overridden = _result(verify_result=True, embedding_override_applied=True)
    assert collect_caveats(overridden) == ["embedding_override"]
    assert collect_caveats(_result(verify_result=True)) == []
