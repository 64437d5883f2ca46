"""Stage 4: an MCP agent's trace must end with an AI message carrying the answer."""

from __future__ import annotations

from typing import ClassVar

from .._context import VerificationContext
from .._stage import Stage
from .._trace import TraceError, final_ai_message
from ._common import fail_verification

__all__ = ["TraceValidationAutoFailStage"]


class TraceValidationAutoFailStage(Stage):
    """Fails the verification (not the run) when the agent trace is malformed.

    Skipped for plain LLM answers and for manual traces, which are trusted.
    """

    name: ClassVar[str] = "TraceValidationAutoFail"

    def should_run(self, ctx: VerificationContext) -> bool:
        return bool(ctx.answering.mcp_urls_dict) and ctx.answering.interface != "manual"

    def run(self, ctx: VerificationContext) -> None:
        trace = ctx.answer.trace_messages if ctx.answer is not None else []
        try:
            final_ai_message(trace)
        except TraceError as exc:
            ctx.trace_validation_failed = True
            ctx.trace_extraction_error = str(exc)
            fail_verification(ctx, stage=self.name, reason=str(exc), auto_fail=True)
