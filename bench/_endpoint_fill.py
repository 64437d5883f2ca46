"""Filling a JSON Schema with a value that validates against it.

The bench endpoint answers ``json_schema`` structured-output calls with this: the
caller's answer hints where they fit the schema, type-appropriate defaults elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["MISSING", "fill_schema"]

#: "No hint given" (``None`` is a legitimate hint for nullable fields).
MISSING: Any = object()


def fill_schema(
    schema: dict[str, Any],
    hint: Any = MISSING,
    *,
    text: str | None = None,
    root: dict[str, Any] | None = None,
    name: str = "value",
    depth: int = 0,
) -> Any:
    """A value valid against ``schema``, taking ``hint`` where it fits the type.

    Covers what pydantic emits: ``type`` (and type lists), ``properties``, ``items``,
    ``prefixItems``, ``enum``, ``const``, ``anyOf``/``oneOf``/``allOf``, local ``$ref``,
    numeric bounds and string lengths. String fields without a hint take ``text``.
    Unsupported keywords (``pattern``, ``format``) are ignored, so such a value may
    fail a strict validator; nothing raises.
    """
    root = schema if root is None else root
    if depth > 24:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return fill_schema(target, hint, text=text, root=root, name=name, depth=depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return hint if hint in schema["enum"] else schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return _fill_union(schema[key], hint, text, root, name, depth)
    if schema.get("allOf"):
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            merged.update(part)
        return fill_schema(merged, hint, text=text, root=root, name=name, depth=depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        if hint is None and "null" in kind:
            return None
        kind = next((item for item in kind if item != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else None
    if kind == "object":
        return _fill_object(schema, hint, text, root, depth)
    if kind == "array":
        return _fill_array(schema, hint, text, root, name, depth)
    if kind == "string":
        return _fill_string(schema, hint, text, name)
    if kind in ("integer", "number"):
        return _fill_number(schema, hint, integer=kind == "integer")
    if kind == "boolean":
        return hint if isinstance(hint, bool) else False
    if kind == "null":
        return None
    return hint if hint is not MISSING else (text if text is not None else name)


def _matches(option: dict[str, Any], hint: Any) -> bool:
    kind = option.get("type")
    checks: dict[str, Callable[[Any], bool]] = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "null": lambda v: v is None,
    }
    return isinstance(kind, str) and kind in checks and checks[kind](hint)


def _fill_union(
    options: list[dict[str, Any]], hint: Any, text: str | None, root: Any, name: str, depth: int
) -> Any:
    chosen = next((opt for opt in options if hint is not MISSING and _matches(opt, hint)), None)
    if chosen is None:
        chosen = next((opt for opt in options if opt.get("type") != "null"), options[0])
    return fill_schema(chosen, hint, text=text, root=root, name=name, depth=depth + 1)


def _fill_object(
    schema: dict[str, Any], hint: Any, text: str | None, root: Any, depth: int
) -> dict[str, Any]:
    given = hint if isinstance(hint, dict) else {}
    properties: dict[str, Any] = schema.get("properties") or {}
    if not properties:
        # A free-form map (dict[str, X]): the hint is the best we can do.
        return dict(given)
    return {
        key: fill_schema(
            sub, given.get(key, MISSING), text=text, root=root, name=key, depth=depth + 1
        )
        for key, sub in properties.items()
    }


def _fill_array(
    schema: dict[str, Any], hint: Any, text: str | None, root: Any, name: str, depth: int
) -> list[Any]:
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list):
        given = hint if isinstance(hint, list) else []
        return [
            fill_schema(
                sub,
                given[i] if i < len(given) else MISSING,
                text=text,
                root=root,
                name=name,
                depth=depth + 1,
            )
            for i, sub in enumerate(prefix)
        ]
    items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
    if isinstance(hint, list):
        return [
            fill_schema(items, h, text=text, root=root, name=name, depth=depth + 1) for h in hint
        ]
    count = max(int(schema.get("minItems", 1)), 0)
    count = min(count, int(schema.get("maxItems", count)))
    return [fill_schema(items, MISSING, text=text, root=root, name=name, depth=depth + 1)] * count


def _fill_string(schema: dict[str, Any], hint: Any, text: str | None, name: str) -> str:
    if isinstance(hint, str):
        value = hint
    elif hint is not MISSING and hint is not None and not isinstance(hint, dict | list):
        value = str(hint)
    else:
        value = text if text is not None else name
    min_len, max_len = int(schema.get("minLength", 0)), schema.get("maxLength")
    if len(value) < min_len:
        value = value + "x" * (min_len - len(value))
    return value[: int(max_len)] if max_len is not None else value


def _fill_number(schema: dict[str, Any], hint: Any, *, integer: bool) -> int | float:
    value: int | float
    if isinstance(hint, bool) or not isinstance(hint, int | float | str):
        value = 0
    else:
        try:
            value = float(hint)
        except ValueError:
            value = 0
    step = 1 if integer else 1e-6
    if "minimum" in schema:
        value = max(value, schema["minimum"])
    if "exclusiveMinimum" in schema:
        value = max(value, schema["exclusiveMinimum"] + step)
    if "maximum" in schema:
        value = min(value, schema["maximum"])
    if "exclusiveMaximum" in schema:
        value = min(value, schema["exclusiveMaximum"] - step)
    return int(value) if integer else float(value)
