"""The mutable state one (question, answering, parsing, replicate) run accumulates.

Stages read and write plain attributes here; FinalizeResult turns them into the
pydantic result sections. Nothing in the context is shared between units, so no
locking is needed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from verifleet.sandbox import TemplateEvaluation, TemplateHandle
from verifleet.schemas import (
    DynamicRubric,
    ModelConfig,
    PromptConfig,
    Question,
    Rubric,
    VerificationConfig,
    VerificationResult,
    VerificationResultDeepJudgment,
    VerificationResultDeepJudgmentRubric,
    VerificationResultRubric,
)
from verifleet.templates import RegexOutcome

from ._answer import CachedAnswer
from ._llm import UsageTracker
from ._llm_protocol import ChatCaller, Message

if TYPE_CHECKING:
    from ._resources import PipelineResources

__all__ = ["CheckRecord", "EmbeddingRecord", "VerificationContext"]


@dataclass
class CheckRecord:
    """State of a yes/no pre-parse check (abstention or sufficiency)."""

    performed: bool = False
    detected: bool | None = None
    override_applied: bool = False
    reasoning: str | None = None


@dataclass
class EmbeddingRecord:
    """State of the embedding check."""

    performed: bool = False
    similarity: float | None = None
    model_used: str | None = None
    override_applied: bool = False


@dataclass
class VerificationContext:
    """Everything one pipeline run knows. Created by :func:`~verifleet.pipeline.run_unit`.

    Inputs are set at creation; the rest starts empty and is filled by stages.
    ``error`` set means a fatal stage failed: later stages are skipped except
    FinalizeResult, which records the error in the result.
    """

    # --- inputs ---------------------------------------------------------------
    question: Question
    answering: ModelConfig
    parsing: ModelConfig
    config: VerificationConfig
    judge: ChatCaller
    resources: PipelineResources
    rubric: Rubric | None = None
    # Global and question dynamic rubrics merged (None: none).
    dynamic_rubric: DynamicRubric | None = None
    replicate: int | None = None
    deadline: float | None = None
    usage: UsageTracker = field(default_factory=UsageTracker)
    answer: CachedAnswer | None = None
    #: Earlier turns of a scenario (user/assistant messages), asked before the question.
    conversation: list[Message] = field(default_factory=list)
    #: A stored result of this unit and parsing model being re-verified: stages
    #: whose inputs it shows unchanged reuse its output instead of calling the judge.
    previous: VerificationResult | None = None

    # --- bookkeeping ------------------------------------------------------------
    started: float = field(default_factory=time.monotonic)
    timestamp: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    error: str | None = None
    warnings: list[str] = field(default_factory=list)

    # --- template (stage 1) -------------------------------------------------------
    #: The validated template as the sandbox described it (no template code here).
    template: TemplateHandle | None = None

    # --- guards (stages 3-4) --------------------------------------------------------
    trace_validation_failed: bool = False

    # --- checks (stages 5-6, 9) -----------------------------------------------------
    abstention: CheckRecord = field(default_factory=CheckRecord)
    sufficiency: CheckRecord = field(default_factory=CheckRecord)
    embedding: EmbeddingRecord = field(default_factory=EmbeddingRecord)

    # --- parsing and verification (stages 7-8) ---------------------------------------
    #: The judge's output validated and verified by the template, in the sandbox.
    parsed_answer: TemplateEvaluation | None = None
    parsed_llm_response: dict[str, object] | None = None
    parsed_gt_response: dict[str, object] | None = None
    template_verification_performed: bool = False
    verify_result: bool | None = None
    field_verification_result: bool | None = None
    verify_granular_result: object = None
    field_verification_error: str | None = None
    template_validation_error: str | None = None
    field_results: dict[str, bool] | None = None
    composition_strategy: str | None = None
    regex: RegexOutcome | None = None
    deep_judgment: VerificationResultDeepJudgment | None = None

    # --- rubric (stages 11-12) ----------------------------------------------------------
    rubric_result: VerificationResultRubric | None = None
    deep_judgment_rubric: VerificationResultDeepJudgmentRubric | None = None
    traits_without_valid_excerpts: list[str] = field(default_factory=list)

    # --- root-level trace filtering fields ------------------------------------------------
    evaluation_input: str | None = None
    used_full_trace: bool = True
    trace_extraction_error: str | None = None

    # --- output ----------------------------------------------------------------------------
    final_result: VerificationResult | None = None

    @property
    def question_id(self) -> str:
        """The question's id."""
        return self.question.id

    @property
    def question_text(self) -> str:
        """The question as asked."""
        return self.question.text

    @property
    def raw_llm_response(self) -> str:
        """The answer text ("" before stage 2 or when generation failed)."""
        return self.answer.raw_llm_response if self.answer is not None else ""

    @property
    def recursion_limit_reached(self) -> bool:
        """The answering agent hit its turn limit."""
        return self.answer is not None and self.answer.recursion_limit_reached

    @property
    def prompts(self) -> PromptConfig:
        """``config.prompt_config``, or one whose instructions are all None."""
        return self.config.prompt_config or PromptConfig()

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.started
