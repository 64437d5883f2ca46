"""Template section of a verification result: the correctness record."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .calls import ModelCall

__all__ = ["VerificationResultTemplate"]


class VerificationResultTemplate(BaseModel):
    """Answer generation, parsing, ``verify()`` outcome and optional checks.

    Present when template evaluation ran (``template_only``, ``template_and_rubric``).
    Every field has a default so a stage can fill in only what it produced. Each check
    keeps three facts apart: attempted (``*_performed``), found (``*_detected`` or a
    score) and whether it overrode ``verify_result`` (``*_override_applied``).

    Raises:
        pydantic.ValidationError: on an unknown field name or a wrongly typed value.
    """

    model_config = ConfigDict(extra="forbid")

    # Template validation (stage 1); None when the template compiled
    template_validation_error: str | None = None

    # Answer generation
    raw_llm_response: str = ""
    trace_messages: list[dict[str, object]] = Field(default_factory=list)

    # Parsing; parsed_llm_response excludes the template's ``id`` and ``correct``
    parsed_llm_response: dict[str, object] | None = None
    parsed_gt_response: dict[str, object] | None = None

    # Verification outcome
    template_verification_performed: bool = False
    verify_result: bool | None = None
    verify_granular_result: object = None
    field_verification_error: str | None = None
    # Tri-valued per field: None means the judge extracted null for that field.
    field_results: dict[str, bool | None] | None = None
    # Partial credit per field (1.0/0.0 unless graded); None when not recorded.
    field_scores: dict[str, float | None] | None = None
    composition_strategy: str | None = None

    # Embedding check
    embedding_check_performed: bool = False
    embedding_similarity_score: float | None = None
    embedding_override_applied: bool = False
    embedding_model_used: str | None = None

    # Regex validations
    regex_validations_performed: bool = False
    regex_validation_results: dict[str, bool] | None = None
    regex_validation_details: dict[str, dict[str, object]] | None = None
    regex_overall_success: bool | None = None
    regex_extraction_results: dict[str, object] | None = None

    # Abstention check
    abstention_check_performed: bool = False
    abstention_detected: bool | None = None
    abstention_override_applied: bool = False
    abstention_reasoning: str | None = None

    # Sufficiency check (detected=True means the response is sufficient)
    sufficiency_check_performed: bool = False
    sufficiency_detected: bool | None = None
    sufficiency_override_applied: bool = False
    sufficiency_reasoning: str | None = None

    # Agents and usage
    recursion_limit_reached: bool = False
    answering_mcp_servers: list[str] | None = None
    usage_metadata: dict[str, dict[str, object]] | None = None
    agent_metrics: dict[str, object] | None = None

    # verifleet: every model call of the result, prompts and raw replies (empty in
    # results written before it was recorded, or with record_model_calls off)
    model_calls: list[ModelCall] = Field(default_factory=list)
