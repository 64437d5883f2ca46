"""Reading a judge's JSON reply: strict parsing, schema checking, repair.

Judges are small models as often as large ones. The checker covers the part of
JSON Schema that pydantic emits for answer templates and check payloads
(``type``, ``properties``, ``required``, ``enum``, ``const``, ``items``,
``anyOf``/``oneOf``, ``additionalProperties: false`` and local ``$ref``), which is
all we need to tell a judge precisely what was wrong with its reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

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


def _structural(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(position, char)`` of the characters of ``text`` outside JSON strings
    (quotes included, escapes respected), from ``start``."""
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
                yield pos, char
        else:
            in_string = char == '"'
            yield pos, char


def _first_object(text: str) -> str | None:
    """The first balanced ``{...}`` in ``text``, respecting strings and escapes."""
    start = text.find("{")
    while start != -1:
        depth = 0
        for pos, char in _structural(text, start):
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    return text[start : pos + 1]
        start = text.find("{", start + 1)
    return None


def _drop_trailing_commas(text: str) -> str:
    """Remove commas that directly precede ``}`` or ``]`` outside strings (a regex
    would also eat them inside string values such as a key ``",]"``)."""
    dropped: set[int] = set()
    last_comma: int | None = None
    for pos, char in _structural(text):
        if char == ",":
            last_comma = pos
        elif char in "}]" and last_comma is not None:
            dropped.add(last_comma)
            last_comma = None
        elif not char.isspace():
            last_comma = None
    return "".join(c for i, c in enumerate(text) if i not in dropped)


def repair_json(text: str) -> dict[str, Any]:
    """Last resort: take the first JSON object in ``text`` and fix trailing commas.

    Raises:
        ValueError: no object could be recovered.
    """
    candidate = _first_object(_THINK.sub("", text))
    if candidate is None:
        raise ValueError("no JSON object found in the reply")
    try:
        value = json.loads(candidate)
    except json.JSONDecodeError:
        try:
            value = json.loads(_drop_trailing_commas(candidate))
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON even after repair ({exc.msg})") from None
    if not isinstance(value, dict):
        raise ValueError("no JSON object found in the reply")
    return value


_TYPE_CHECKS: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
}


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    node: Any = root
    for part in ref[2:].split("/"):
        node = node.get(part, {}) if isinstance(node, dict) else {}
    return _resolve(node, root) if isinstance(node, dict) else {}


def _check(value: Any, schema: dict[str, Any], root: dict[str, Any], path: str) -> list[str]:
    schema = _resolve(schema, root)
    where = path or "the reply"
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            if any(not _check(value, opt, root, path) for opt in options if isinstance(opt, dict)):
                break
            return [f"{where}: {json.dumps(value)[:80]} matches none of the allowed forms"]
    if "const" in schema and value != schema["const"]:
        return [f"{where}: must be {json.dumps(schema['const'])}"]
    if isinstance(schema.get("enum"), list) and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(v) for v in schema["enum"])
        return [f"{where}: {json.dumps(value)[:80]} is not one of {allowed}"]
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else list(declared or [])
    if types and not any(_TYPE_CHECKS.get(t, lambda _v: True)(value) for t in types):
        return [f"{where}: expected {' or '.join(types)}, got {_json_type(value)}"]
    errors: list[str] = []
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for name in schema.get("required") or []:
            if name not in value:
                errors.append(f"{_join(path, name)}: required field is missing")
        for name, item in value.items():
            if name in props:
                errors.extend(_check(item, props[name], root, _join(path, name)))
            elif schema.get("additionalProperties") is False:
                errors.append(f"{_join(path, name)}: unexpected field")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            errors.extend(_check(item, schema["items"], root, f"{path}[{index}]"))
    return errors


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _json_type(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPE_CHECKS[name](value):
            return name
    return type(value).__name__


def schema_errors(value: Any, schema: dict[str, Any]) -> list[str]:
    """Every way ``value`` violates ``schema`` (empty when it conforms).

    Messages name the field path, e.g. ``answer.count: expected integer, got string``.
    """
    return _check(value, schema, schema, "")
