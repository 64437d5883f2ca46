"""Stage 9: semantic fallback for a failed field verification."""

from __future__ import annotations

from typing import ClassVar

from verifleet.schemas import VerificationConfig

from .._checks import run_embedding_check
from .._context import VerificationContext
from .._stage import Stage
from ._common import log

__all__ = ["EmbeddingCheckStage"]


class EmbeddingCheckStage(Stage):
    """When fields failed, compares ground truth and parsed values by embedding
    similarity and, above the threshold, asks the judge for equivalence. An
    equivalent answer flips the *field* result to True; ``verify_result`` is then
    recomputed with the regex result, so a regex failure is never overridden.

    Included in template modes; runs only when ``embedding_check_enabled``.
    Non-fatal.
    """

    name: ClassVar[str] = "EmbeddingCheck"
    fatal: ClassVar[bool] = False
    failure_label: ClassVar[str] = "embedding check failed"

    def should_include(self, config: VerificationConfig, *, has_rubric: bool = False) -> bool:
        return config.template_stages_enabled

    def should_run(self, ctx: VerificationContext) -> bool:
        return (
            ctx.config.embedding_check_enabled
            and ctx.field_verification_result is False
            and ctx.parsed_answer is not None
            and not ctx.abstention.detected
        )

    def run(self, ctx: VerificationContext) -> None:
        embedder = ctx.resources.embedder(ctx.config.embedding_check_model)
        outcome = run_embedding_check(
            ctx.judge,
            embedder,
            question=ctx.question_text,
            gt=ctx.parsed_gt_response or {},
            parsed=ctx.parsed_llm_response or {},
            threshold=ctx.config.embedding_check_threshold,
            instructions=ctx.prompts.embedding_equivalence,
        )
        record = ctx.embedding
        record.performed = True
        record.similarity = outcome.similarity
        record.model_used = outcome.model_name
        if not outcome.equivalent:
            return
        regex_ok = ctx.regex.passed if ctx.regex is not None else True
        previous = ctx.verify_result
        ctx.field_verification_result = True
        ctx.verify_result = regex_ok
        record.override_applied = True
        log.warning(
            "%s override for question %s: field verification False -> True "
            "(similarity %.3f; verify_result %s -> %s)",
            self.name,
            ctx.question_id,
            outcome.similarity,
            previous,
            ctx.verify_result,
        )
