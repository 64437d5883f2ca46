"""The result of rubric evaluation and how its result sections are assembled."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from verifleet.schemas import VerificationResultDeepJudgmentRubric, VerificationResultRubric

from .deep_judgment_rubric import TraitJudgment

__all__ = ["RubricOutcome", "deep_judgment_section"]


class RubricOutcome(BaseModel):
    """What :func:`~.evaluate.evaluate_rubric` produced for one response.

    Attributes:
        rubric: The result's ``rubric`` section.
        deep_judgment_rubric: The ``deep_judgment_rubric`` section; None when no
            trait was evaluated with deep judgment.
        failed_traits: ``{name: reason}`` of traits that ran but could not be scored
            (invalid judge output, a crashing callable, no valid excerpt).
        skipped_traits: ``{name: reason}`` of static traits that were not run
            (agentic traits when no investigator was given). Dynamic traits that were
            skipped are in ``rubric.dynamic_rubric_skipped_traits``.
        model_calls: Requests made to the judge, all recorded under
            ``rubric_evaluation`` (a re-ask inside the ``ChatCaller`` is not counted
            again; the usage metadata has the exact token totals).
    """

    model_config = ConfigDict(extra="forbid")

    rubric: VerificationResultRubric
    deep_judgment_rubric: VerificationResultDeepJudgmentRubric | None = None
    failed_traits: dict[str, str] = Field(default_factory=dict)
    skipped_traits: dict[str, str] = Field(default_factory=dict)
    model_calls: int = 0

    @property
    def traits_without_valid_excerpts(self) -> list[str]:
        """Traits that stage 12 (DeepJudgmentRubricAutoFail) fails the result for."""
        section = self.deep_judgment_rubric
        if section is None or not section.deep_judgment_rubric_performed:
            return []
        return list(section.traits_without_valid_excerpts or [])


def deep_judgment_section(
    judgments: Mapping[str, TraitJudgment], standard_scores: Mapping[str, bool | int]
) -> VerificationResultDeepJudgmentRubric | None:
    """Build the ``deep_judgment_rubric`` section (None when ``judgments`` is empty).

    ``standard_scores`` are the scores of the LLM traits judged without deep
    judgment, kept for comparison as the specification describes.
    """
    if not judgments:
        return None
    scores: dict[str, bool | int] = {}
    excerpts: dict[str, list[dict[str, object]]] = {}
    reasoning: dict[str, str] = {}
    metadata: dict[str, dict[str, object]] = {}
    auto_failed: list[str] = []
    risks: dict[str, dict[str, object]] = {}
    for name, judgment in judgments.items():
        metadata[name] = dict(judgment.metadata)
        if judgment.hallucination_risk is not None:
            risks[name] = dict(judgment.hallucination_risk)
        if judgment.auto_failed:
            auto_failed.append(name)
            continue
        if judgment.excerpts is not None:
            excerpts[name] = list(judgment.excerpts)
        if judgment.reasoning is not None:
            reasoning[name] = judgment.reasoning
        if judgment.value is not None:
            scores[name] = judgment.value.score
    return VerificationResultDeepJudgmentRubric(
        deep_judgment_rubric_performed=True,
        extracted_rubric_excerpts=excerpts,
        rubric_trait_reasoning=reasoning,
        deep_judgment_rubric_scores=scores,
        standard_rubric_scores=dict(standard_scores),
        trait_metadata=metadata,
        traits_without_valid_excerpts=auto_failed,
        rubric_hallucination_risk_assessment=risks or None,
        total_deep_judgment_model_calls=sum(
            int(j.metadata.get("model_calls", 0)) for j in judgments.values()
        ),
        total_traits_evaluated=len(scores),
        total_excerpt_retries=sum(
            int(j.metadata.get("excerpt_retry_count", 0)) for j in judgments.values()
        ),
    )
