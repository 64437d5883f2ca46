"""What the checks return to the stages that call them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from verifleet.schemas import VerificationResultDeepJudgment

__all__ = ["CheckOutcome", "DeepJudgmentOutcome", "EmbeddingOutcome"]


class CheckOutcome(BaseModel):
    """The verdict of a yes/no judge check (abstention, sufficiency).

    Attributes:
        detected: For abstention, the response abstains; for sufficiency, the
            response IS sufficient to fill the template.
        reasoning: The judge's explanation, recorded in the result.
    """

    model_config = ConfigDict(frozen=True)

    detected: bool
    reasoning: str


class EmbeddingOutcome(BaseModel):
    """The embedding check's measurement and, above the threshold, the judge's verdict.

    Attributes:
        similarity: Cosine similarity of the serialised ground truth and parsed
            answer, clipped to [0, 1].
        equivalent: The judge found them semantically equivalent (always False
            when the judge was not asked).
        model_name: The embedding model that produced ``similarity``.
        reasoning: The judge's explanation; None when it was not asked.
        judged: Whether the judge was asked (similarity reached the threshold).
    """

    model_config = ConfigDict(frozen=True)

    similarity: float = Field(ge=0.0, le=1.0)
    equivalent: bool
    model_name: str
    reasoning: str | None = None
    judged: bool


class DeepJudgmentOutcome(BaseModel):
    """Deep-judgment parsing: the parsed values and the evidence behind them.

    Attributes:
        parsed: The judge's field values, ready for the template class.
        section: The result's ``deep_judgment`` section.
        attributes_without_excerpts: Attributes with no accepted excerpt after all
            retries (DeepJudgmentAutoFail fails the result when non-empty).
    """

    model_config = ConfigDict(frozen=True)

    parsed: dict[str, object]
    section: VerificationResultDeepJudgment
    attributes_without_excerpts: list[str]
