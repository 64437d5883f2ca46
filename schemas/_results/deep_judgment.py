"""Deep-judgment sections: excerpt-backed evidence for template and rubric results."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["VerificationResultDeepJudgment", "VerificationResultDeepJudgmentRubric"]


class VerificationResultDeepJudgment(BaseModel):
    """Deep judgment of template attributes: excerpts, reasoning, hallucination risk.

    ``extracted_excerpts`` maps an attribute to a list of excerpt dicts (``text``,
    ``confidence``, ``similarity_score`` and, with search, ``search_results``,
    ``hallucination_risk``, ``hallucination_justification``). An empty list means no
    excerpt was found; reasoning may still explain why.

    Raises:
        pydantic.ValidationError: on an unknown field name or a wrongly typed value.
    """

    model_config = ConfigDict(extra="forbid")

    deep_judgment_enabled: bool = False
    # The original's mode: "full" (excerpts, reasoning, parameters) or "reasoning_only"
    deep_judgment_mode: str | None = None
    deep_judgment_performed: bool = False
    deep_judgment_stages_completed: list[str] | None = None
    deep_judgment_model_calls: int = 0
    deep_judgment_excerpt_retry_count: int = 0
    attributes_without_excerpts: list[str] | None = None
    extracted_excerpts: dict[str, list[dict[str, object]]] | None = None
    attribute_reasoning: dict[str, str] | None = None
    deep_judgment_search_enabled: bool = False
    hallucination_risk_assessment: dict[str, str] | None = None


class VerificationResultDeepJudgmentRubric(BaseModel):
    """Deep judgment of rubric traits: per-trait excerpts, reasoning and scores.

    ``traits_without_valid_excerpts`` lists traits that exhausted their excerpt
    retries (they auto-fail unless abstention was detected).

    Raises:
        pydantic.ValidationError: on an unknown field name or a wrongly typed value.
    """

    model_config = ConfigDict(extra="forbid")

    deep_judgment_rubric_performed: bool = False
    extracted_rubric_excerpts: dict[str, list[dict[str, object]]] | None = None
    rubric_trait_reasoning: dict[str, str] | None = None
    deep_judgment_rubric_scores: dict[str, bool | int] | None = None
    standard_rubric_scores: dict[str, bool | int] | None = None
    trait_metadata: dict[str, dict[str, object]] | None = None
    traits_without_valid_excerpts: list[str] | None = None
    rubric_hallucination_risk_assessment: dict[str, dict[str, object]] | None = None
    total_deep_judgment_model_calls: int = 0
    total_traits_evaluated: int = 0
    total_excerpt_retries: int = 0
