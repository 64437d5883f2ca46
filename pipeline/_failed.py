"""Results for a unit whose pipeline never ran to its end: what the local runner
records for a unit that raised or overran its deadline, and what a worker records
for a unit it quarantined."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from verifleet.schemas import (
    ModelConfig,
    Question,
    VerificationConfig,
    VerificationResult,
    VerificationResultMetadata,
    result_template_id,
)

__all__ = ["failed_results"]


def failed_results(
    question: Question,
    answering: ModelConfig,
    parsing_models: Sequence[ModelConfig],
    config: VerificationConfig,
    *,
    replicate: int | None,
    error: str,
) -> list[VerificationResult]:
    """One errored result per parsing model (``completed_without_errors=False``,
    ``metadata.error`` = ``error``), shaped as the pipeline's own results so that
    they are keyed, counted and exported like them."""
    timestamp = datetime.now(UTC).isoformat()
    answering_id = answering.identity()
    results = []
    for parsing_model in parsing_models:
        parsing = parsing_model.identity(role="parsing")
        results.append(
            VerificationResult(
                metadata=VerificationResultMetadata(
                    question_id=question.id,
                    # The id the pipeline's own results carry in this mode, so
                    # that the keys of these agree with the unit's (rubric_only).
                    template_id=result_template_id(question, config),
                    question_text=question.text,
                    raw_answer=question.raw_answer,
                    keywords=question.keywords,
                    answering=answering_id,
                    parsing=parsing,
                    answering_system_prompt=answering.system_prompt,
                    parsing_system_prompt=parsing_model.system_prompt,
                    replicate=replicate,
                    run_name=config.run_name,
                    evaluation_mode=config.evaluation_mode,
                    completed_without_errors=False,
                    error=error,
                    execution_time=0.0,
                    timestamp=timestamp,
                    result_id=VerificationResultMetadata.compute_result_id(
                        question_id=question.id,
                        answering=answering_id,
                        parsing=parsing,
                        timestamp=timestamp,
                        replicate=replicate,
                    ),
                )
            )
        )
    return results
