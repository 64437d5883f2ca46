"""The interface every pipeline stage implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from verifleet.errors import StageFailure
from verifleet.schemas import VerificationConfig, VerifleetError

from ._adapters import ManualAnswerError
from ._context import VerificationContext
from ._llm_protocol import ModelCallError, StructuredOutputError

__all__ = ["Stage", "StageFailure", "describe_cause"]


class Stage(ABC):
    """One step of the verification pipeline.

    Class attributes:
        name: The spec's stage name, e.g. ``"ParseTemplate"``.
        fatal: When :meth:`run` raises, a fatal stage sets ``ctx.error`` (later
            stages are skipped, FinalizeResult still runs); a non-fatal one is
            logged at WARNING and the pipeline continues.
        failure_label: Prefix of ``ctx.error``, e.g. ``"parsing failed"``.
        runs_after_error: Runs even when ``ctx.error`` is set (FinalizeResult only).
    """

    name: ClassVar[str]
    fatal: ClassVar[bool] = True
    failure_label: ClassVar[str] = "stage failed"
    runs_after_error: ClassVar[bool] = False

    def should_include(self, config: VerificationConfig, *, has_rubric: bool = False) -> bool:
        """Static inclusion: whether the stage is part of the pipeline at all.

        Args:
            config: The run's configuration (evaluation mode, enabled checks).
            has_rubric: Whether the unit has rubric traits (static or dynamic).
        """
        return True

    def should_run(self, ctx: VerificationContext) -> bool:
        """Runtime skip: whether to run for this context (the default always runs)."""
        return True

    @abstractmethod
    def run(self, ctx: VerificationContext) -> None:
        """Do the stage's work on ``ctx``.

        Raises:
            Exception: any failure; the orchestrator contains it according to
                :attr:`fatal`.
        """

    def describe_failure(self, exc: BaseException) -> str:
        """The ``ctx.error`` text for ``exc``: ``"<failure_label>: <cause>"``."""
        return f"{self.failure_label}: {describe_cause(exc)}"

    def __repr__(self) -> str:
        return f"<{self.name}>"


def describe_cause(exc: BaseException) -> str:
    """``exc`` as a cause in an error message.

    Our own errors (model calls, templates, checks, rubrics, recorded answers)
    already read well (``429 Too Many Requests after 4 attempts``);
    anything else is a surprise, so its type is shown too.
    """
    known = (
        ModelCallError,
        StructuredOutputError,
        VerifleetError,
        ManualAnswerError,
        StageFailure,
    )
    return str(exc) if isinstance(exc, known) else f"{type(exc).__name__}: {exc}"
