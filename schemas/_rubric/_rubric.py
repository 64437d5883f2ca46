"""Rubrics (collections of traits), dynamic rubrics, and merging them.

A benchmark has an optional global rubric applied to every question and each
question an optional rubric of its own; the two merge per question, and a trait
name defined in both is an error (a silent override would score a question by a
criterion its author did not write).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._errors import RubricError
from ._callable import CallableTrait
from ._traits import AgenticRubricTrait, LLMRubricTrait, MetricRubricTrait, RegexTrait

__all__ = [
    "AnyTrait",
    "DynamicRubric",
    "Rubric",
    "merge_dynamic_rubrics",
    "merge_rubrics",
]

AnyTrait = LLMRubricTrait | RegexTrait | CallableTrait | MetricRubricTrait | AgenticRubricTrait
"""Any rubric trait."""

_LIST_FOR_TYPE: dict[str, str] = {
    "llm": "llm_traits",
    "regex": "regex_traits",
    "callable": "callable_traits",
    "metric": "metric_traits",
    "agentic": "agentic_traits",
}


class _TraitCollection(BaseModel):
    """Traits grouped by type. Input may also give one flat ``traits`` list whose
    entries carry ``trait_type`` (``llm`` when missing), which reads better in YAML."""

    model_config = ConfigDict(extra="forbid")

    llm_traits: list[LLMRubricTrait] = Field(default_factory=list)
    regex_traits: list[RegexTrait] = Field(default_factory=list)
    callable_traits: list[CallableTrait] = Field(default_factory=list)
    metric_traits: list[MetricRubricTrait] = Field(default_factory=list)
    agentic_traits: list[AgenticRubricTrait] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _flat_traits(cls, data: object) -> object:
        if not isinstance(data, dict) or "traits" not in data:
            return data
        data = dict(data)
        flat = data.pop("traits") or []
        if not isinstance(flat, list):
            raise ValueError("'traits' must be a list")
        for entry in flat:
            if isinstance(entry, dict):
                kind = entry.get("trait_type", "llm")
            else:
                kind = getattr(entry, "trait_type", None)
            if kind not in _LIST_FOR_TYPE:
                raise ValueError(f"trait_type {kind!r} is not one of {sorted(_LIST_FOR_TYPE)}")
            data.setdefault(_LIST_FOR_TYPE[kind], [])
            data[_LIST_FOR_TYPE[kind]] = [*data[_LIST_FOR_TYPE[kind]], entry]
        return data

    @model_validator(mode="after")
    def _unique_names(self) -> _TraitCollection:
        seen: set[str] = set()
        for trait in self.all_traits():
            if trait.name in seen:
                raise RubricError(f"trait name {trait.name!r} is used twice in one rubric")
            seen.add(trait.name)
        return self

    def all_traits(self) -> list[AnyTrait]:
        """Every trait, in type order: llm, regex, callable, metric, agentic."""
        return [
            *self.llm_traits,
            *self.regex_traits,
            *self.callable_traits,
            *self.metric_traits,
            *self.agentic_traits,
        ]

    def get_trait_names(self) -> list[str]:
        """Names of every trait, in type order."""
        return [t.name for t in self.all_traits()]

    def get_trait(self, name: str) -> AnyTrait | None:
        """The trait called ``name``, or ``None``."""
        return next((t for t in self.all_traits() if t.name == name), None)

    def is_empty(self) -> bool:
        """Whether there is no trait at all."""
        return not self.all_traits()


class Rubric(_TraitCollection):
    """Traits evaluated unconditionally on every answer they apply to."""

    def get_trait_max_scores(self) -> dict[str, int]:
        """``max_score`` of score and literal traits (LLM, callable, agentic)."""
        scaled: list[LLMRubricTrait | CallableTrait | AgenticRubricTrait] = [
            *self.llm_traits,
            *self.callable_traits,
            *self.agentic_traits,
        ]
        return {
            t.name: t.max_score
            for t in scaled
            if t.kind in ("score", "literal") and t.max_score is not None
        }

    def get_trait_directionalities(self) -> dict[str, bool | None]:
        """``higher_is_better`` per trait; metric traits are left out (their
        metrics are always higher-is-better), template traits map to ``None``."""
        return {
            t.name: t.higher_is_better
            for t in self.all_traits()
            if not isinstance(t, MetricRubricTrait)
        }


class DynamicRubric(_TraitCollection):
    """Traits evaluated only when the judge finds their concept in the answer.

    Every trait needs a ``summary`` or ``description``: that text is what the
    presence check asks the judge about.
    """

    @model_validator(mode="after")
    def _concept_text(self) -> DynamicRubric:
        for trait in self.all_traits():
            if not (trait.summary or trait.description):
                raise RubricError(
                    f"dynamic rubric trait {trait.name!r} needs a summary or a description "
                    "for the presence check"
                )
        return self


def _has_traits(rubric: _TraitCollection | None) -> bool:
    return rubric is not None and not rubric.is_empty()


def _concatenated(
    first: _TraitCollection, second: _TraitCollection, *, first_label: str, second_label: str
) -> dict[str, list[object]]:
    """Per-type trait lists of ``first`` then ``second``; a shared name is an error."""
    clashes = sorted(set(first.get_trait_names()) & set(second.get_trait_names()))
    if clashes:
        names = ", ".join(repr(n) for n in clashes)
        raise RubricError(
            f"trait name clash: {names} defined in both the {first_label} and the {second_label}"
        )
    return {
        name: [*getattr(first, name), *getattr(second, name)] for name in _LIST_FOR_TYPE.values()
    }


def merge_rubrics(
    global_rubric: Rubric | None,
    question_rubric: Rubric | None,
    *,
    question_id: str | None = None,
) -> Rubric | None:
    """Global traits followed by the question's own.

    Returns:
        The merged rubric; either one alone when the other has no trait; ``None``
        when neither has a trait.

    Raises:
        RubricError: a trait name appears in both; the message names the trait, the
            global rubric and the question's rubric.
    """
    if global_rubric is None or global_rubric.is_empty():
        return question_rubric if _has_traits(question_rubric) else None
    if question_rubric is None or question_rubric.is_empty():
        return global_rubric
    label = f"rubric of question {question_id}" if question_id else "question-specific rubric"
    lists = _concatenated(
        global_rubric, question_rubric, first_label="global rubric", second_label=label
    )
    return Rubric.model_validate(lists)


def merge_dynamic_rubrics(
    global_dynamic: DynamicRubric | None,
    question_dynamic: DynamicRubric | None,
    *,
    question_id: str | None = None,
) -> DynamicRubric | None:
    """Dynamic counterpart of :func:`merge_rubrics` (same rules, same errors)."""
    if global_dynamic is None or global_dynamic.is_empty():
        return question_dynamic if _has_traits(question_dynamic) else None
    if question_dynamic is None or question_dynamic.is_empty():
        return global_dynamic
    label = (
        f"dynamic rubric of question {question_id}" if question_id else "question dynamic rubric"
    )
    lists = _concatenated(
        global_dynamic, question_dynamic, first_label="global dynamic rubric", second_label=label
    )
    return DynamicRubric.model_validate(lists)
