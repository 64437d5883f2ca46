"""Rubric traits from the schema.org ``Rating`` objects of JSON-LD checkpoints.

A Rating carries a trait's name and description, ``bestRating``/``worstRating``,
an ``additionalType`` naming the trait type (``karenina:GlobalRegexTrait``,
``QuestionSpecificMetricRubricTrait``, ...; older files omit the ``karenina:``
prefix) and the trait's settings as ``additionalProperty`` name/value pairs.
Settings may be stored as values or as JSON text; both are read.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from verifleet.errors import RubricError

from .._config import ModelConfig
from .._rubric import (
    AgenticRubricTrait,
    AnyTrait,
    CallableTrait,
    DynamicRubric,
    LLMRubricTrait,
    MetricRubricTrait,
    RegexTrait,
    Rubric,
)

__all__ = [
    "RatingError",
    "error_message",
    "legacy_rubric_traits",
    "property_map",
    "rubrics_from_ratings",
    "validation_summary",
]

_TRAIT_CLASSES: dict[str, type[AnyTrait]] = {
    "llm": LLMRubricTrait,
    "regex": RegexTrait,
    "callable": CallableTrait,
    "metric": MetricRubricTrait,
    "agentic": AgenticRubricTrait,
}

# Type suffix after the Global/QuestionSpecific scope -> trait type.
_SUFFIXES: dict[str, str] = {
    "RubricTrait": "llm",
    "LLMRubricTrait": "llm",
    "RegexTrait": "regex",
    "RegexRubricTrait": "regex",
    "CallableTrait": "callable",
    "CallableRubricTrait": "callable",
    "MetricRubricTrait": "metric",
    "AgenticRubricTrait": "agentic",
    "DynamicRubricTrait": "dynamic",
}

logger = logging.getLogger(__name__)

_LIST_FIELDS = ("tp_instructions", "tn_instructions", "metrics", "classes")
_PICKLE_PROTOCOL_MARK = b"\x80"


class RatingError(RubricError):
    """A Rating cannot be turned into a trait; the message names the trait."""


def error_message(error: ErrorDetails) -> str:
    """One pydantic error's message without pydantic's "Value error, " prefix."""
    return str(error["msg"]).removeprefix("Value error, ")


def validation_summary(exc: ValidationError) -> str:
    """Pydantic errors as ``field.path: message`` joined by ``; ``."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"])
        parts.append(f"{where}: {error_message(error)}" if where else error_message(error))
    return "; ".join(parts)


def _decode_json_text(value: object) -> object:
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def property_map(node: dict[str, object], *, what: str) -> dict[str, object]:
    """``additionalProperty`` of ``node`` as ``{name: value}``.

    Raises:
        RatingError: the property list is not a list of ``{name, value}`` objects.
    """
    raw = node.get("additionalProperty") or []
    if not isinstance(raw, list):
        raise RatingError(f"{what}: additionalProperty must be a list")
    props: dict[str, object] = {}
    for entry in raw:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise RatingError(f"{what}: additionalProperty entries need a 'name'")
        props[entry["name"]] = entry.get("value")
    return props


def _trait_type(additional_type: object, name: str) -> str:
    if additional_type is None:
        return "llm"
    if not isinstance(additional_type, str):
        raise RatingError(f"trait {name!r}: additionalType must be text")
    local = additional_type.split(":", 1)[-1]
    for scope in ("Global", "QuestionSpecific"):
        if local.startswith(scope) and local[len(scope) :] in _SUFFIXES:
            return _SUFFIXES[local[len(scope) :]]
    if local.endswith("ManualRubricTrait"):
        raise RatingError(f"trait {name!r}: manual rubric traits are no longer supported")
    raise RatingError(f"trait {name!r}: unknown trait type {additional_type!r}")


def _as_int(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _callable_fields(fields: dict[str, object], name: object) -> dict[str, object]:
    """Sort ``callable_code`` into pickled code or ``def`` source.

    The original framework stores base64 of whatever bytes the trait holds: a
    cloudpickle blob (its ``from_callable``) or the UTF-8 source of a ``def`` (its
    fixture and notebook checkpoints). A pickle is kept as ``callable_code``
    (running it needs trust); base64 of source is decoded to ``callable_source``;
    plain source text (some older files) is taken as is. No code at all loads as a
    trait without code, as the original loads it (empty code that fails when run).
    """
    code = fields.get("callable_code")
    if isinstance(code, str) and not code.strip():
        code = None
    if code is None:
        logger.warning("callable trait %r has no code; it will fail when evaluated", name)
        return {k: v for k, v in fields.items() if k != "callable_code"}
    if not isinstance(code, str):
        return fields
    try:
        raw = base64.b64decode(code, validate=True)
    except (binascii.Error, ValueError):
        raw = None
    if raw is not None and raw.startswith(_PICKLE_PROTOCOL_MARK):
        return fields
    source = code
    if raw is not None:
        try:
            source = raw.decode("utf-8")
        except UnicodeDecodeError:
            return fields  # neither pickle nor text: let the trait report it
    fields = {k: v for k, v in fields.items() if k != "callable_code"}
    fields["callable_source"] = source
    return fields


def _fields_for(
    kind: str, rating: dict[str, object], props: dict[str, object]
) -> dict[str, object]:
    name = rating.get("name")
    best, worst = _as_int(rating.get("bestRating")), _as_int(rating.get("worstRating"))
    fields: dict[str, object] = {
        k: _decode_json_text(v) if k in _LIST_FIELDS else v for k, v in props.items()
    }
    fields.pop("dynamic_trait_type", None)
    if kind in ("llm", "agentic") and "kind" not in fields:
        fields["kind"] = "boolean" if (best, worst) == (1, 0) else "score"
    if kind in ("llm", "agentic") and fields.get("kind") == "score":
        fields.setdefault("min_score", worst)
        fields.setdefault("max_score", best)
    if kind == "callable":
        fields = _callable_fields(fields, rating.get("name"))
    if kind == "regex" and fields.get("pattern") is None:
        # The original reads a missing pattern as "" (which matches every text).
        logger.warning("regex trait %r has no pattern; using '' as the original does", name)
        fields["pattern"] = ""
    override = _decode_json_text(fields.get("model_override"))
    if kind == "agentic" and isinstance(override, dict):
        # The original ModelConfig has settings ours does not (retries, SDK options);
        # keep the ones that mean the same here.
        fields["model_override"] = {
            k: v for k, v in override.items() if k in ModelConfig.model_fields
        }
    return fields


def _build(kind: str, rating: dict[str, object], props: dict[str, object]) -> AnyTrait:
    name = rating.get("name")
    fields = _fields_for(kind, rating, props)
    allowed = _TRAIT_CLASSES[kind].model_fields
    # Unknown settings (newer framework versions, GUI bookkeeping) are dropped, not fatal.
    data = {k: v for k, v in fields.items() if k in allowed and v is not None}
    data["name"] = name
    if rating.get("description") is not None:
        data["description"] = rating["description"]
    try:
        return _TRAIT_CLASSES[kind].model_validate(data)
    except ValidationError as exc:
        summary = validation_summary(exc)
        # Model-level messages already name the trait; field-level ones do not.
        prefix = "" if repr(name) in summary else f"trait {name!r}: "
        raise RatingError(prefix + summary) from None


def rubrics_from_ratings(
    ratings: object, *, what: str
) -> tuple[Rubric | None, DynamicRubric | None]:
    """Static and dynamic rubrics from a ``rating`` list.

    Raises:
        RatingError: a Rating is malformed or has an unknown type (names the trait),
            or two traits share a name.
    """
    if ratings is None:
        return None, None
    if not isinstance(ratings, list):
        raise RatingError(f"{what}: 'rating' must be a list")
    static: list[AnyTrait] = []
    dynamic: list[AnyTrait] = []
    for rating in ratings:
        if not isinstance(rating, dict) or not isinstance(rating.get("name"), str):
            raise RatingError(f"{what}: every Rating needs a 'name'")
        kind = _trait_type(rating.get("additionalType"), rating["name"])
        props = property_map(rating, what=f"trait {rating['name']!r}")
        if kind == "dynamic":
            inner = props.get("dynamic_trait_type", "llm")
            if inner not in _TRAIT_CLASSES:
                # The original skips such a trait with a warning; so do we.
                logger.warning(
                    "dynamic trait %r: unknown dynamic_trait_type %r; skipped",
                    rating["name"],
                    inner,
                )
                continue
            dynamic.append(_build(inner, rating, props))
        else:
            static.append(_build(kind, rating, props))
    try:
        rubric = Rubric.model_validate({"traits": static}) if static else None
        dynamic_rubric = DynamicRubric.model_validate({"traits": dynamic}) if dynamic else None
    except ValidationError as exc:
        raise RatingError(f"{what}: {validation_summary(exc)}") from None
    return rubric, dynamic_rubric


def legacy_rubric_traits(data: object, *, what: str) -> list[AnyTrait]:
    """Traits from a rubric written as typed lists (``llm_traits``, ``regex_traits``,
    ...), as some older checkpoints do under ``globalRubric``.

    Raises:
        RatingError: an entry is malformed (names the trait).
    """
    if data is None:
        return []
    if not isinstance(data, dict):
        raise RatingError(f"{what}: expected an object with trait lists")
    traits: list[AnyTrait] = []
    for kind in _TRAIT_CLASSES:
        entries = _decode_json_text(data.get(f"{kind}_traits")) or []
        if not isinstance(entries, list):
            raise RatingError(f"{what}: {kind}_traits must be a list")
        for entry in entries:
            if not isinstance(entry, dict):
                raise RatingError(f"{what}: {kind}_traits entries must be objects")
            fields = dict(entry)
            if "invert" in fields:
                fields.setdefault("invert_result", fields.pop("invert"))
            if kind == "callable":
                fields = _callable_fields(fields, fields.get("name"))
            if kind == "regex" and fields.get("pattern") is None:
                fields["pattern"] = ""  # the original's default, as for Ratings
            allowed = _TRAIT_CLASSES[kind].model_fields
            clean = {k: v for k, v in fields.items() if k in allowed and v is not None}
            try:
                traits.append(_TRAIT_CLASSES[kind].model_validate(clean))
            except ValidationError as exc:
                name = entry.get("name", "?")
                raise RatingError(f"trait {name!r}: {validation_summary(exc)}") from None
    return traits
