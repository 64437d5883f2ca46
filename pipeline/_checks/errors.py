"""Exceptions raised by the pre-parse and enhancement checks.

The stages treat abstention, sufficiency and embedding failures as non-fatal (they
log and continue) and a deep-judgment failure as a parsing failure; these types
let them tell a misbehaving judge from a broken model endpoint
(:class:`~verifleet.pipeline._llm_protocol.ModelCallError`, which the checks let
through unchanged).
"""

from __future__ import annotations

from verifleet.schemas import VerifleetError

__all__ = ["CheckError", "CheckReplyError", "DeepJudgmentError", "EmbeddingModelError"]


class CheckError(VerifleetError):
    """Base class of every error a check raises deliberately."""


class CheckReplyError(CheckError, ValueError):
    """The judge answered, but not with the object the check asked for.

    Attributes:
        stage: The stage label of the call (e.g. ``"abstention_check"``).
        reply: The object the judge returned.
        problem: What is wrong with it.
    """

    def __init__(self, problem: str, *, stage: str, reply: object) -> None:
        self.problem = problem
        self.stage = stage
        self.reply = reply
        super().__init__(f"{stage}: malformed judge reply: {problem}")


class EmbeddingModelError(CheckError):
    """The configured embedding model cannot be resolved or loaded offline.

    Attributes:
        model_name: The name as configured.
    """

    def __init__(self, problem: str, *, model_name: str) -> None:
        self.model_name = model_name
        super().__init__(f"embedding model '{model_name}': {problem}")


class DeepJudgmentError(CheckError):
    """Deep-judgment parsing cannot run or produced unusable parameters
    (search enabled without a search function, parameters the answer class
    rejects)."""
