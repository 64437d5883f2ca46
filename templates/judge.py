"""What crosses the boundary between a template and the judge.

The judge sees :func:`judge_json_schema` (no ``id``, ground truth, regex checks or
trace-verified fields) and returns a dict that :func:`build_answer` validates into
the template class; results record :func:`parsed_ground_truth` and
:func:`parsed_llm_fields`.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Iterator, Mapping
from typing import Any, get_args

from pydantic_core import to_jsonable_python

from .base_answer import BaseAnswer, strip_verification_metadata
from .validation import probe_instance

__all__ = [
    "build_answer",
    "judge_field_names",
    "judge_json_schema",
    "parsed_ground_truth",
    "parsed_llm_fields",
]


def judge_field_names(answer_cls: type[BaseAnswer]) -> list[str]:
    """The fields the judge fills, in declaration order. Empty means the template is
    regex/trace-only and the judge call can be skipped."""
    return answer_cls.judge_fields()


def _nested_answer_classes(answer_cls: type[BaseAnswer]) -> Iterator[type[BaseAnswer]]:
    """BaseAnswer subclasses used (at any depth) as field types of ``answer_cls``."""
    seen: set[type] = {answer_cls}
    pending: list[Any] = [info.annotation for info in answer_cls.model_fields.values()]
    while pending:
        annotation = pending.pop()
        pending.extend(get_args(annotation))
        if (
            isinstance(annotation, type)
            and issubclass(annotation, BaseAnswer)
            and annotation not in seen
        ):
            seen.add(annotation)
            yield annotation
            pending.extend(info.annotation for info in annotation.model_fields.values())


def _restrict(node: dict[str, Any], answer_cls: type[BaseAnswer]) -> None:
    """Keep only ``answer_cls``'s judge fields in an object schema, in place."""
    fields = judge_field_names(answer_cls)
    hints = {
        name: meta.extraction_hint
        for name, meta in answer_cls.verified_fields().items()
        if meta.extraction_hint
    }
    properties: dict[str, Any] = node.get("properties", {})
    kept: dict[str, Any] = {}
    for name in fields:
        if name not in properties:
            continue
        prop = dict(properties[name])
        if name in hints:
            base = prop.get("description", "")
            prop["description"] = f"{base} (Format: {hints[name]})".strip()
        kept[name] = prop
    node["properties"] = kept
    required = [name for name in node.get("required", []) if name in kept]
    if required:
        node["required"] = required
    else:
        node.pop("required", None)
    node.pop("additionalProperties", None)


# Schemas are fixed per class and the pipeline asks once per result.
_SCHEMAS: weakref.WeakKeyDictionary[type, dict[str, Any]] = weakref.WeakKeyDictionary()


def judge_json_schema(answer_cls: type[BaseAnswer]) -> dict[str, Any]:
    """The JSON schema the judge fills (a fresh copy each call).

    Only judge fields appear (never ``id``, ``correct``, ``regex`` or trace-verified
    fields, also inside nested ``BaseAnswer`` models); ``VerifiedField`` extraction
    hints are appended to descriptions.
    """
    cached = _SCHEMAS.get(answer_cls)
    if cached is None:
        schema = strip_verification_metadata(copy.deepcopy(answer_cls.model_json_schema()))
        _restrict(schema, answer_cls)
        definitions: dict[str, Any] = schema.get("$defs", {})
        for nested in _nested_answer_classes(answer_cls):
            if isinstance(definitions.get(nested.__name__), dict):
                _restrict(definitions[nested.__name__], nested)
        cached = _SCHEMAS[answer_cls] = schema
    return copy.deepcopy(cached)


# The ground truth of a class never changes; the pipeline asks once per result.
_GROUND_TRUTHS: weakref.WeakKeyDictionary[type, tuple[dict[str, Any] | None]] = (
    weakref.WeakKeyDictionary()
)


def parsed_ground_truth(answer_cls: type[BaseAnswer]) -> dict[str, Any] | None:
    """The template's ground truth as JSON-safe data (``parsed_gt_response``), or
    None when the template declares none. Computed once per class; each call
    returns a fresh copy.

    Raises:
        Exception: Whatever the template's ground-truth code raises (a validated
            template does not).
    """
    cached = _GROUND_TRUTHS.get(answer_cls)
    if cached is None:
        ground_truth = probe_instance(answer_cls).get_ground_truth()
        jsonable = (
            to_jsonable_python(ground_truth, fallback=repr)
            if isinstance(ground_truth, dict)
            else None
        )
        cached = _GROUND_TRUTHS[answer_cls] = (jsonable,)
    return copy.deepcopy(cached[0])


def parsed_llm_fields(instance: BaseAnswer) -> dict[str, Any]:
    """The judge's values (``parsed_llm_response``): judge fields only, JSON-safe."""
    fields = set(judge_field_names(type(instance)))
    dumped: dict[str, Any] = instance.model_dump(mode="json", include=fields)
    return dumped


def build_answer(
    answer_cls: type[BaseAnswer],
    judge_output: Mapping[str, Any],
    *,
    question_id: str | None = None,
) -> BaseAnswer:
    """Validate the judge's dict into ``answer_cls``.

    Keys that are not judge fields (``id``, ``correct``, ``regex``, anything
    invented) are dropped, so a judge cannot overwrite the ground truth; trace-
    verified fields get placeholders (their result comes from the raw response).
    ``question_id``, when given, becomes the answer's ``id`` after the template's
    ``model_post_init`` ran, exactly where a question-bound class
    (:func:`inject_question_id`) sets it, without building such a class per
    question.

    Raises:
        pydantic.ValidationError: A value has the wrong type or a field is missing;
            its message is the retry feedback for the judge.
    """
    fields = set(judge_field_names(answer_cls))
    data = {key: value for key, value in judge_output.items() if key in fields}
    verified = answer_cls.verified_fields()
    for name in answer_cls.trace_fields():
        info = answer_cls.model_fields[name]
        if info.is_required():
            data[name] = verified[name].ground_truth
    answer = answer_cls.model_validate(data)
    if question_id is not None:
        answer.id = question_id
    return answer
