"""Read JSON-LD checkpoints of the original framework into a :class:`Benchmark`.

The shape is described in ``shared/spec/checkpoint-format.md``: a ``DataFeed`` whose
``dataFeedElement`` items each hold a schema.org ``Question`` (text, accepted
answer, template source in ``hasPart``, rubric in ``rating``, metadata in
``additionalProperty``, ``keywords``), plus the global rubric in ``rating``.
Every question is read even after a bad one, so one error lists all problems.
"""

from __future__ import annotations

import json
import logging

from pydantic import ValidationError

from verifleet.errors import VerifleetError

from .._identity import md5_hex
from .._rubric import AnyTrait, DynamicRubric, Rubric
from .._scenario import BrokenScenario, ScenarioDefinition
from .._scenario._jsonld import is_scenario_part, scenario_from_jsonld
from ._benchmark import Benchmark
from ._question import Question
from ._ratings import (
    RatingError,
    legacy_rubric_traits,
    property_map,
    rubrics_from_ratings,
    validation_summary,
)

__all__ = ["Problem", "benchmark_from_checkpoint"]

logger = logging.getLogger(__name__)

Problem = tuple[str | None, str]
"""(question id or ``None`` for the benchmark itself, what is wrong)."""

_LEGACY_GLOBAL_PROPS = {
    "global_regex_rubric_traits": "regex_traits",
    "global_callable_rubric_traits": "callable_traits",
    "global_metric_rubric_traits": "metric_traits",
}
_QUESTION_PROPS = {"finished", "author", "sources", "few_shot_examples", "answer_notes"}


class _QuestionProblem(VerifleetError, ValueError):
    """A problem inside one question (the caller knows which)."""


def _text_of(node: object) -> str | None:
    """``text`` of a schema.org node, or of the first node in a list of them."""
    if isinstance(node, list):
        node = next((n for n in node if isinstance(n, dict)), None)
    if isinstance(node, dict) and isinstance(node.get("text"), str):
        return str(node["text"])
    return None


def _template_source(has_part: object) -> str | None:
    parts = has_part if isinstance(has_part, list) else [has_part]
    for part in parts:
        if isinstance(part, dict) and part.get("@type", "SoftwareSourceCode") == (
            "SoftwareSourceCode"
        ):
            text = part.get("text")
            if text is not None and not isinstance(text, str):
                raise _QuestionProblem("template (hasPart.text) must be text")
            return text if text and text.strip() else None
    return None


def _json_value(value: object, name: str) -> object:
    """Some writers store structured metadata as JSON text."""
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise _QuestionProblem(f"property {name!r} is not valid JSON: {exc}") from None
    return value


def _keywords(item: dict[str, object], element: dict[str, object]) -> list[str]:
    raw = item.get("keywords", element.get("keywords"))
    if raw is None:
        return []
    if isinstance(raw, str):
        return [k.strip() for k in raw.split(",") if k.strip()]
    if not isinstance(raw, list):
        raise _QuestionProblem("keywords must be a list of text")
    return [str(k) for k in raw if k is not None]


def _question_fields(element: dict[str, object]) -> dict[str, object]:
    item = element.get("item")
    if not isinstance(item, dict):
        raise _QuestionProblem("dataFeedElement entry has no 'item' object")
    text = item.get("text")
    if not isinstance(text, str) or not text.strip():
        raise _QuestionProblem("question has no text")
    fields: dict[str, object] = {
        "text": text,
        "raw_answer": _text_of(item.get("acceptedAnswer")),
        "answer_template": _template_source(item.get("hasPart")),
        "keywords": _keywords(item, element),
        "date_created": element.get("dateCreated"),
        "date_modified": element.get("dateModified"),
    }
    try:
        props = property_map(item, what="question")
        rubric, dynamic = rubrics_from_ratings(item.get("rating"), what="question rating")
    except RatingError as exc:
        raise _QuestionProblem(str(exc)) from None
    fields["question_rubric"], fields["question_dynamic_rubric"] = rubric, dynamic
    custom: dict[str, object] = {}
    for name, value in props.items():
        if name in _QUESTION_PROPS:
            fields[name] = _json_value(value, name)
        elif name.startswith("custom_"):
            custom[name[len("custom_") :]] = value
        elif name == "workspace_path":
            # Question workspaces (the original's agents work in that folder) are
            # not implemented: keep the path where a user can see it, and say so.
            custom[name] = value
            logger.warning(
                "question %s: workspace_path %r is kept in custom_metadata; question "
                "workspaces are not supported",
                element.get("@id") or text[:40],
                value,
            )
    fields["custom_metadata"] = custom
    return {k: v for k, v in fields.items() if v is not None}


def _elements(data: dict[str, object]) -> list[object]:
    elements = data.get("dataFeedElement")
    if elements is None:
        # Early checkpoints (a schema.org Dataset) kept the questions in hasPart.
        parts = data.get("hasPart")
        is_items = isinstance(parts, list) and all(
            isinstance(p, dict) and p.get("@type") == "DataFeedItem" for p in parts
        )
        elements = parts if is_items else []
    if not isinstance(elements, list):
        raise RatingError("dataFeedElement must be a list")
    return elements


def _global_rubrics(data: dict[str, object]) -> tuple[Rubric | None, DynamicRubric | None]:
    rubric, dynamic = rubrics_from_ratings(data.get("rating"), what="global rating")
    extra: list[AnyTrait] = legacy_rubric_traits(data.get("globalRubric"), what="globalRubric")
    props = property_map(data, what="benchmark")
    for prop, list_name in _LEGACY_GLOBAL_PROPS.items():
        if prop in props:
            extra += legacy_rubric_traits({list_name: props[prop]}, what=prop)
    if extra:
        traits = [*(rubric.all_traits() if rubric else []), *extra]
        try:
            rubric = Rubric.model_validate({"traits": traits})
        except ValidationError as exc:
            raise RatingError(f"global rubric: {validation_summary(exc)}") from None
    return rubric, dynamic


def _scenarios(data: dict[str, object]) -> tuple[list[ScenarioDefinition], list[BrokenScenario]]:
    """The scenarios in ``hasPart`` (parts of other types are left to other readers),
    and those that fail validation: each of those fails alone, as in the original,
    whose other scenarios run."""
    parts = data.get("hasPart")
    if not isinstance(parts, list):
        return [], []
    scenarios: list[ScenarioDefinition] = []
    broken: list[BrokenScenario] = []
    for position, part in enumerate(parts, start=1):
        if not is_scenario_part(part):
            continue
        name = part.get("name") if isinstance(part.get("name"), str) else f"#{position}"
        try:
            scenarios.append(scenario_from_jsonld(part))
        except ValueError as exc:
            broken.append(BrokenScenario.from_error(name or f"#{position}", exc))
    return scenarios, broken


def _creator(value: object) -> str | None:
    if isinstance(value, dict):
        value = value.get("name")
    return value if isinstance(value, str) else None


def benchmark_from_checkpoint(
    data: object, *, default_name: str
) -> tuple[Benchmark | None, list[Problem]]:
    """Build a benchmark from a parsed checkpoint.

    Returns:
        The benchmark (``None`` when anything is wrong) and every problem found,
        each with the id of the question it concerns.
    """
    if not isinstance(data, dict):
        return None, [(None, "a checkpoint must be a JSON object")]
    problems: list[Problem] = []
    try:
        global_rubric, global_dynamic = _global_rubrics(data)
        elements = _elements(data)
    except RatingError as exc:
        return None, [(None, str(exc))]
    questions: list[Question] = []
    seen: set[str] = set()
    for position, element in enumerate(elements, start=1):
        qid = _element_id(element, position)
        try:
            if not isinstance(element, dict):
                raise _QuestionProblem("dataFeedElement entries must be objects")
            question = Question.model_validate({"id": qid, **_question_fields(element)})
        except _QuestionProblem as exc:
            problems.append((qid, str(exc)))
            continue
        except ValidationError as exc:
            problems.append((qid, validation_summary(exc)))
            continue
        if question.id in seen:
            problems.append((question.id, "question id is used by more than one question"))
        seen.add(question.id)
        questions.append(question)
    scenarios, broken = _scenarios(data)
    if problems:
        return None, problems
    props = property_map(data, what="benchmark")
    custom = {k: v for k, v in props.items() if k not in _LEGACY_GLOBAL_PROPS}
    try:
        benchmark = Benchmark(
            name=str(data.get("name") or default_name),
            version=str(data.get("version") or "0.1.0"),
            description=str(data.get("description") or ""),
            creator=_creator(data.get("creator")),
            id=data.get("@id") if isinstance(data.get("@id"), str) else None,
            questions=questions,
            global_rubric=global_rubric,
            global_dynamic_rubric=global_dynamic,
            custom_metadata=custom,
            scenarios=scenarios,
            broken_scenarios=broken,
        )
    except ValidationError as exc:
        return None, [(None, validation_summary(exc))]
    return benchmark, []


def _element_id(element: object, position: int) -> str:
    """The question id: the item's ``@id``, else MD5 of the text, else its position
    (only used to name the question in an error)."""
    if isinstance(element, dict):
        if isinstance(element.get("@id"), str) and element["@id"]:
            return str(element["@id"])
        item = element.get("item")
        text = item.get("text") if isinstance(item, dict) else None
        if isinstance(text, str) and text:
            return md5_hex(text)
    return f"#{position}"
