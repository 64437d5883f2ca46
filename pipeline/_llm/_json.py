"""Reading a judge's JSON reply: strict parsing, schema checking, repair.

Judges are small models as often as large ones. Replies are checked against the
JSON schema the judge was given with ``jsonschema`` and repaired with
``json_repair``; what is ours is the wording of the problems, which goes back to
the judge when it is asked again, so it must name the field and say what to fix.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from typing import Any

import json_repair
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, UnknownType, ValidationError
from referencing.exceptions import Unresolvable

__all__ = ["parse_strict", "repair_json", "schema_errors"]

_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?```$", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def parse_strict(text: str) -> dict[str, Any]:
    """Parse a reply that should be exactly one JSON object.

    Tolerates surrounding whitespace, a reasoning model's ``<think>`` block and a
    single Markdown code fence around the object; nothing else.

    Raises:
        ValueError: the text is not one JSON object (message says why).
    """
    body = _THINK.sub("", text).strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def _first_object(text: str) -> str | None:
    """The first balanced ``{...}`` in ``text`` (strings and escapes respected), or
    everything from the first ``{`` when no object closes (a reply cut off at
    ``max_tokens``); None without a ``{``."""
    start = text.find("{")
    if start == -1:
        return None
    depth = 0
    in_string = escaped = False
    for pos in range(start, len(text)):
        char = text[pos]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[start : pos + 1]
    return text[start:]


def repair_json(text: str) -> dict[str, Any]:
    """Last resort: take the first JSON object in ``text`` and repair it with
    ``json_repair`` (trailing commas, missing commas or quotes, unclosed brackets).

    Raises:
        ValueError: no object could be recovered.
    """
    candidate = _first_object(_THINK.sub("", text))
    if candidate is None:
        raise ValueError("no JSON object found in the reply")
    try:
        return _object(json.loads(candidate))
    except json.JSONDecodeError:
        pass
    repaired = json_repair.loads(candidate)
    if not isinstance(repaired, dict) or (not repaired and candidate.strip() != "{}"):
        raise ValueError("not valid JSON even after repair")
    return repaired


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("no JSON object found in the reply")
    return value


_TYPES = Draft202012Validator.TYPE_CHECKER

# Only the reply's shape sends a judge back: a value out of a range (``maximum``,
# ``minLength``, ...) is the template's or the rubric's to judge (a score is
# clamped, as the original framework does), not a reason for another call.
_SHAPE_KEYWORDS = frozenset(
    {"type", "required", "additionalProperties", "enum", "const", "anyOf", "oneOf", "items"}
)


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(schema_json))


def _where(path: Iterable[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _json_type(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPES.is_type(value, name):
            return name
    return type(value).__name__


def _messages(error: ValidationError) -> list[str]:
    """Our wording of one jsonschema error: short, naming the field, in terms a
    small judge model can act on when it is re-asked."""
    path = _where(error.absolute_path)
    where = path or "the reply"
    value, kind = error.instance, error.validator
    if kind == "required":
        missing = [n for n in error.validator_value if isinstance(value, dict) and n not in value]
        return [f"{_join(path, n)}: required field is missing" for n in missing]
    if kind == "additionalProperties" and isinstance(value, dict):
        known = error.schema.get("properties") or {}
        return [f"{_join(path, n)}: unexpected field" for n in value if n not in known]
    if kind == "type":
        declared = error.validator_value
        types = [declared] if isinstance(declared, str) else list(declared)
        return [f"{where}: expected {' or '.join(types)}, got {_json_type(value)}"]
    if kind == "enum":
        allowed = ", ".join(json.dumps(v) for v in error.validator_value)
        return [f"{where}: {json.dumps(value)[:80]} is not one of {allowed}"]
    if kind == "const":
        return [f"{where}: must be {json.dumps(error.validator_value)}"]
    if kind in ("anyOf", "oneOf"):
        return [f"{where}: {json.dumps(value)[:80]} matches none of the allowed forms"]
    return [f"{where}: {error.message}"]


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def schema_errors(value: Any, schema: dict[str, Any]) -> list[str]:
    """Every way ``value`` violates ``schema`` (empty when it conforms), checked by
    ``jsonschema`` (draft 2020-12, what pydantic emits).

    Messages name the field path, e.g. ``answer.count: expected integer, got string``.
    Only shape problems count (types, required and unexpected fields, enums,
    constants, alternatives); range and format keywords do not. A schema jsonschema cannot use (an unresolvable ``$ref``) checks nothing: the
    reply is then judged by the template's own validation alone.
    """
    try:
        validator = _validator(json.dumps(schema, sort_keys=True))
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    except (SchemaError, UnknownType, Unresolvable):
        return []
    messages: list[str] = []
    for error in errors:
        if error.validator in _SHAPE_KEYWORDS:
            messages.extend(m for m in _messages(error) if m not in messages)
    return messages
