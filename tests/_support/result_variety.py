"""A deterministic set of results that exercises every part of the result model:
errors, every verdict, each section, free-form maps, None-heavy and value-heavy
results. Shared by the export tests (unit and Redis integration)."""

from __future__ import annotations

from verifleet.schemas import (
    ModelIdentity,
    VerificationResult,
    VerificationResultDeepJudgment,
    VerificationResultDeepJudgmentRubric,
    VerificationResultRubric,
    VerificationResultTemplate,
)

from .factories import make_result

__all__ = ["numbered", "varied_results"]


def _everything(question_id: str) -> VerificationResult:
    base = make_result(question_id, answering="m-a", parsing="m-j", replicate=3)
    meta = base.metadata.model_copy(
        update={
            "answering": ModelIdentity(model_name="m-a", tools=["search", "calc"]),
            "keywords": ["k1", "k2"],
            "run_name": "nightly",
            "scenario_path": ["a", "b"],
            "evaluation_mode": "template_and_rubric",
        }
    )
    template = VerificationResultTemplate(
        raw_llm_response="BCL2 in the pancreas",
        trace_messages=[{"role": "assistant", "content": "BCL2"}],
        parsed_llm_response={"target": "BCL2", "tissue": None},
        parsed_gt_response={"target": "BCL2", "tissue": "pancreas"},
        template_verification_performed=True,
        verify_result=False,
        verify_granular_result=0.5,
        field_results={"target": True, "tissue": None},
        embedding_check_performed=True,
        embedding_similarity_score=0.91,
        embedding_model_used="minilm",
        regex_validations_performed=True,
        regex_validation_results={"gene": True},
        regex_overall_success=True,
        abstention_check_performed=True,
        abstention_detected=False,
        usage_metadata={
            "answer_generation": {"input_tokens": 10, "output_tokens": 4, "model": "m-a"},
            "total": {"input_tokens": 30, "output_tokens": 9, "total_tokens": 39},
        },
        agent_metrics={"iterations": 2, "tool_calls": ["search"], "big": 2**70},
    )
    return VerificationResult(
        metadata=meta,
        template=template,
        rubric=VerificationResultRubric(
            rubric_evaluation_performed=True,
            rubric_evaluation_strategy="batch",
            llm_trait_scores={"clarity": 4, "safe": True},
            callable_trait_scores={"short": 0.5},
            metric_trait_scores={"cov": {"precision": 1.0, "recall": 0.25}},
            metric_trait_confusion_lists={"cov": {"tp": ["a"], "fn": []}},
        ),
        deep_judgment=VerificationResultDeepJudgment(
            deep_judgment_enabled=True,
            deep_judgment_performed=True,
            extracted_excerpts={"target": [{"text": "BCL2", "confidence": "high"}]},
            attribute_reasoning={"target": "named twice"},
        ),
        deep_judgment_rubric=VerificationResultDeepJudgmentRubric(
            deep_judgment_rubric_performed=True,
            deep_judgment_rubric_scores={"clarity": 3},
            trait_metadata={"clarity": {"model": "judge", "calls": 2}},
        ),
        evaluation_input="BCL2",
        used_full_trace=False,
        trace_extraction_error="no trace",
    )


def varied_results() -> list[VerificationResult]:
    """Seven results, each with a distinct question id."""
    return [
        make_result("q1", verified=True),
        make_result("q2", verified=False, replicate=2),
        make_result("q3", verified=None, error="answer generation failed: timeout"),
        make_result("q4", answering="m-a", parsing="m-j"),
        _everything("q5"),
        _everything("q6").model_copy(update={"template": None, "rubric": None}),
        make_result("q7").model_copy(update={"template": None}),  # metadata only
    ]


def numbered(count: int) -> list[VerificationResult]:
    """``count`` results cycling through :func:`varied_results`, each with its own
    question id (so each has its own result key in a job)."""
    pool = varied_results()
    out = []
    for index in range(count):
        base = pool[index % len(pool)]
        meta = base.metadata.model_copy(
            update={"question_id": f"{base.metadata.question_id}-{index}"}
        )
        out.append(base.model_copy(update={"metadata": meta}))
    return out
