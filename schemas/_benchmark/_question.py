"""The benchmark question."""

from __future__ import annotations

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from verifleet.templates import compute_template_id

from .._identity import md5_hex
from .._rubric import DynamicRubric, Rubric

__all__ = ["Question"]


class Question(BaseModel):
    """One benchmark question with everything needed to verify answers to it.

    ``id`` defaults to the MD5 of the question text (the spec's rule); sources that
    carry their own id (a checkpoint item's ``@id``, an ``id`` in our format) keep
    it. ``text`` also accepts the key ``question``.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str = Field(min_length=1)
    text: str = Field(min_length=1, validation_alias=AliasChoices("text", "question"))
    raw_answer: str | None = None
    keywords: list[str] = Field(default_factory=list)
    answer_template: str | None = None
    question_rubric: Rubric | None = None
    question_dynamic_rubric: DynamicRubric | None = None
    few_shot_examples: list[dict[str, str]] | None = None
    custom_metadata: dict[str, object] = Field(default_factory=dict)
    answer_notes: str | None = None
    author: dict[str, object] | None = None
    sources: list[dict[str, object]] | None = None
    finished: bool = True
    date_created: str | None = None
    date_modified: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _default_id(cls, data: object) -> object:
        if isinstance(data, dict) and not data.get("id"):
            text = data.get("text", data.get("question"))
            if isinstance(text, str) and text:
                data = {**data, "id": md5_hex(text)}
        return data

    @property
    def template_id(self) -> str:
        """MD5 of the normalised template source, or ``"no_template"``."""
        return compute_template_id(self.answer_template)

    @property
    def has_template(self) -> bool:
        """Whether the question carries a non-blank answer template."""
        return bool(self.answer_template and self.answer_template.strip())
