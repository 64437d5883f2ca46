"""Rubric trait models: LLM, regex, metric and agentic traits.

Callable traits live in :mod:`._callable` because they carry code. Every trait
serialises to JSON and back unchanged (``model_dump(mode="json")`` then
``model_validate``): traits travel to workers inside the job stored in Redis.
Invalid settings raise pydantic's ``ValidationError`` naming the field.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .._config import ModelConfig
from ._metrics import METRIC_REQUIREMENTS, VALID_METRICS, available_buckets

__all__ = [
    "AgenticRubricTrait",
    "LLMRubricTrait",
    "MetricRubricTrait",
    "RegexTrait",
    "TraitKind",
]

TraitKind = Literal["boolean", "score", "literal"]
"""Scalar trait kinds: pass/fail, integer score in [min, max], or one of ``classes``."""

_MIN_CLASSES = 2
_MAX_CLASSES = 20


class _TraitBase(BaseModel):
    """Fields every trait shares; ``summary`` is the short concept label a dynamic
    rubric's presence check shows to the judge."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    description: str | None = None
    summary: str | None = None

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("trait name must not be blank")
        return value

    def concept_text(self) -> str:
        """Text used by a dynamic rubric's presence check: summary, else description,
        else the name."""
        return self.summary or self.description or self.name


def _split_classes(data: object) -> object:
    """Accept ``classes`` as a list of names or as the original framework's
    ``{name: description}`` mapping (order = index), keeping descriptions aside."""
    if isinstance(data, dict) and isinstance(data.get("classes"), dict):
        mapping: dict[str, object] = data["classes"]
        data = dict(data)
        data["classes"] = list(mapping)
        data.setdefault("class_descriptions", {str(k): str(v) for k, v in mapping.items()})
    return data


def _check_classes(classes: list[str] | None) -> list[str] | None:
    if classes is None:
        return None
    if not _MIN_CLASSES <= len(classes) <= _MAX_CLASSES:
        raise ValueError(
            f"a literal trait needs {_MIN_CLASSES} to {_MAX_CLASSES} classes, got {len(classes)}"
        )
    seen: set[str] = set()
    for label in classes:
        if not label.strip():
            raise ValueError("class names must not be blank")
        if label.lower() in seen:
            raise ValueError(f"duplicate class name (case-insensitive): {label!r}")
        seen.add(label.lower())
    return classes


class _ScaledTrait(_TraitBase):
    """Shared kind/score/classes logic of LLM and agentic traits.

    ``kind="template"`` (structured output described by ``template_schema``) is
    accepted so that checkpoints using it load; its results are keyed
    ``"<trait>.<field>"``.
    """

    kind: Literal["boolean", "score", "literal", "template"] = "boolean"
    min_score: int | None = None
    max_score: int | None = None
    classes: list[str] | None = None
    class_descriptions: dict[str, str] | None = None
    template_schema: dict[str, object] | None = None
    higher_is_better: bool | None = True

    @model_validator(mode="before")
    @classmethod
    def _normalise_input(cls, data: object) -> object:
        data = _split_classes(data)
        if isinstance(data, dict) and isinstance(data.get("kind"), dict):
            # The original framework stores a template kind as {"type": "template", "schema": ...}.
            spec = data["kind"]
            if spec.get("type") != "template" or not isinstance(spec.get("schema"), dict):
                raise ValueError("a dict kind must be {'type': 'template', 'schema': {...}}")
            data = dict(data)
            data["kind"] = "template"
            data["template_schema"] = spec["schema"]
        return data

    @field_validator("classes")
    @classmethod
    def _valid_classes(cls, value: list[str] | None) -> list[str] | None:
        return _check_classes(value)

    @model_validator(mode="after")
    def _kind_settings(self) -> _ScaledTrait:
        if self.kind == "literal":
            if not self.classes:
                raise ValueError(f"literal trait {self.name!r} needs classes")
            self.min_score, self.max_score = 0, len(self.classes) - 1
        elif self.kind == "score":
            self.min_score = 1 if self.min_score is None else self.min_score
            self.max_score = 5 if self.max_score is None else self.max_score
            if self.min_score >= self.max_score:
                raise ValueError(
                    f"score trait {self.name!r}: min_score {self.min_score} must be "
                    f"below max_score {self.max_score}"
                )
        elif self.kind == "boolean":
            self.min_score = self.max_score = None
        else:
            if self.template_schema is None:
                raise ValueError(f"template trait {self.name!r} needs template_schema")
            self.higher_is_better = None
        if self.kind != "template" and self.higher_is_better is None:
            self.higher_is_better = True
        return self

    def class_index(self, label: str) -> int:
        """Index of ``label`` among ``classes`` (case-insensitive); -1 when unknown."""
        wanted = label.strip().lower()
        for index, name in enumerate(self.classes or []):
            if name.lower() == wanted:
                return index
        return -1

    def class_label(self, index: int) -> str | None:
        """Class name at ``index``, or ``None`` when out of range or not literal."""
        classes = self.classes or []
        return classes[index] if 0 <= index < len(classes) else None

    def validate_score(self, value: object) -> bool:
        """Whether ``value`` is a legal result for this trait (-1 = unknown class is
        legal for literal traits; template traits accept anything)."""
        if self.kind == "template":
            return True
        if self.kind == "boolean":
            return isinstance(value, bool)
        if isinstance(value, bool) or not isinstance(value, int):
            return False
        if self.kind == "literal" and value == -1:
            return True
        assert self.min_score is not None and self.max_score is not None
        return self.min_score <= value <= self.max_score


class LLMRubricTrait(_ScaledTrait):
    """A trait a judge LLM scores: boolean, score in [min_score, max_score] (default
    1-5), or literal (the judge picks one of ``classes``; the result is its index,
    the label is kept alongside).

    Deep-judgment settings (excerpts, retries, search) apply when the run enables
    deep judgment for rubrics; ``None`` means "use the run's default".
    """

    trait_type: Literal["llm"] = "llm"
    deep_judgment_enabled: bool = False
    deep_judgment_excerpt_enabled: bool = True
    deep_judgment_max_excerpts: int | None = Field(default=None, ge=1)
    deep_judgment_fuzzy_match_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    deep_judgment_excerpt_retry_attempts: int | None = Field(default=None, ge=0)
    deep_judgment_search_enabled: bool = False


class RegexTrait(_TraitBase):
    """A deterministic pass/fail trait: does ``pattern`` occur in the text?

    ``invert_result`` turns "must match" into "must not match".
    """

    trait_type: Literal["regex"] = "regex"
    pattern: str
    case_sensitive: bool = True
    invert_result: bool = False
    higher_is_better: bool = True

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {value!r}: {exc}") from None
        return value

    def evaluate(self, text: str) -> bool:
        """Search ``text`` for the pattern (``re.search``); inverted when asked.

        Never raises for a validated trait (the pattern compiled at construction).
        """
        flags = 0 if self.case_sensitive else re.IGNORECASE
        found = re.search(self.pattern, text, flags) is not None
        return not found if self.invert_result else found


class MetricRubricTrait(_TraitBase):
    """A judge sorts instructions into confusion-matrix buckets; metrics follow.

    ``tp_only``: only ``tp_instructions`` (what must be present); buckets tp, fn,
    fp; metrics precision, recall, f1. ``full_matrix``: ``tn_instructions`` too
    (what must be absent); all four buckets; adds specificity and accuracy.
    ``repeated_extraction`` deduplicates repeated items (case-insensitive).
    """

    trait_type: Literal["metric"] = "metric"
    evaluation_mode: Literal["tp_only", "full_matrix"] = "tp_only"
    metrics: list[str] = Field(min_length=1)
    tp_instructions: list[str] = Field(default_factory=list)
    tn_instructions: list[str] = Field(default_factory=list)
    repeated_extraction: bool = True

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - VALID_METRICS)
        if unknown:
            raise ValueError(f"unknown metrics {unknown}; valid: {sorted(VALID_METRICS)}")
        return value

    @model_validator(mode="after")
    def _computable(self) -> MetricRubricTrait:
        if not self.tp_instructions:
            raise ValueError(f"metric trait {self.name!r} needs tp_instructions")
        if self.evaluation_mode == "full_matrix" and not self.tn_instructions:
            raise ValueError(
                f"metric trait {self.name!r} in full_matrix mode needs tn_instructions"
            )
        buckets = available_buckets(self.evaluation_mode)
        missing = [m for m in self.metrics if not METRIC_REQUIREMENTS[m] <= buckets]
        if missing:
            raise ValueError(
                f"metric trait {self.name!r}: {missing} need true negatives, which "
                f"{self.evaluation_mode} mode does not produce (use full_matrix)"
            )
        return self

    def required_buckets(self) -> frozenset[str]:
        """Confusion buckets this trait's evaluation produces."""
        return available_buckets(self.evaluation_mode)


class AgenticRubricTrait(_ScaledTrait):
    """A trait an agent with tools investigates before scoring (same kinds as LLM
    traits). Names may not contain ``.``: template results use dotted keys."""

    trait_type: Literal["agentic"] = "agentic"
    description: str = Field(min_length=1)
    context_mode: Literal["workspace_only", "trace_and_workspace", "trace_only"] = (
        "trace_and_workspace"
    )
    materialize_trace: bool = False
    persist_trace: bool = False
    max_turns: int = Field(default=15, gt=0)
    timeout_seconds: int = Field(default=120, gt=0)
    model_override: ModelConfig | None = None

    @field_validator("name")
    @classmethod
    def _no_dots(cls, value: str) -> str:
        if "." in value:
            raise ValueError(f"agentic trait name {value!r} must not contain '.'")
        return value

    @model_validator(mode="after")
    def _trace_available(self) -> AgenticRubricTrait:
        if self.materialize_trace and self.context_mode == "workspace_only":
            raise ValueError(
                f"agentic trait {self.name!r}: materialize_trace needs the trace, "
                "but context_mode is 'workspace_only'"
            )
        return self
