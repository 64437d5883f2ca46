"""Reading a judge's JSON reply: strict parsing, schema checking, repair.

Judges are small models as often as large ones. Replies are checked against the
JSON schema the judge was given with ``jsonschema`` and repaired with
``json_repair``; what is ours is the wording of the problems, which goes back to
the judge when it is asked again, so it must name the field and say what to fix.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable

import json_repair
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, UnknownType, ValidationError
from jsonschema.protocols import Validator
from referencing.exceptions import Unresolvable

from ._safe_schema import (
    SHAPE_KEYWORDS,
    BudgetExceeded,
    UnsafeSchema,
    bounded_validator,
    reduce_schema,
    step_budget,
)

__all__ = ["first_object", "parse_strict", "repair_json", "schema_errors"]

_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?```$", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def parse_strict(text: str) -> dict[str, object]:
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


def first_object(text: str) -> str | None:
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


def repair_json(text: str) -> dict[str, object]:
    """Last resort: take the first JSON object in ``text`` and repair it with
    ``json_repair`` (trailing commas, missing commas or quotes, unclosed brackets).

    Raises:
        ValueError: no object could be recovered.
    """
    candidate = first_object(_THINK.sub("", text))
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


def _object(value: object) -> dict[str, object]:
    if not isinstance(value, dict):
        raise ValueError("no JSON object found in the reply")
    return value


_log = logging.getLogger(__name__)

_TYPES = Draft202012Validator.TYPE_CHECKER


# Keyed by a digest of the schema, so large schemas are not kept as keys; a
# schema the host will not check is remembered as None (and logged once).
_VALIDATORS: OrderedDict[str, Validator | None] = OrderedDict()
_VALIDATORS_LOCK = threading.Lock()
_MAX_VALIDATORS = 256


def _validator_for(schema: dict[str, object]) -> Validator | None:
    """The bounded validator of ``schema``'s safe reduction, or None when the
    host does not check replies against it."""
    try:
        text = json.dumps(schema, sort_keys=True, default=str)
    except (RecursionError, ValueError):
        return None
    digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
    with _VALIDATORS_LOCK:
        if digest in _VALIDATORS:
            _VALIDATORS.move_to_end(digest)
            return _VALIDATORS[digest]
    validator: Validator | None
    try:
        validator = bounded_validator(reduce_schema(schema))
    except UnsafeSchema as exc:
        _log.warning(
            "judge replies are not shape-checked on the host (the template's own "
            "validation in the sandbox still applies): %s",
            exc,
        )
        validator = None
    with _VALIDATORS_LOCK:
        _VALIDATORS[digest] = validator
        while len(_VALIDATORS) > _MAX_VALIDATORS:
            _VALIDATORS.popitem(last=False)
    return validator


def _where(path: Iterable[object]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _json_type(value: object) -> str:
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


def schema_errors(value: object, schema: dict[str, object]) -> list[str]:
    """Every way ``value`` violates ``schema`` (empty when it conforms), checked by
    ``jsonschema`` (draft 2020-12, what pydantic emits).

    Messages name the field path, e.g. ``answer.count: expected integer, got string``.
    Only shape problems count (types, required and unexpected fields, enums,
    constants, alternatives); range and format keywords do not.

    ``schema`` may come from template code, so it is checked in its safe
    reduction (:func:`~verifleet.pipeline._llm._safe_schema.reduce_schema`: no
    regular expression, no reference outside the document, bounded size and
    expansion) under a step budget. A schema beyond those bounds, one with an
    unresolvable ``$ref``, and a check that runs out of budget check nothing:
    the reply is then judged by the template's own validation alone (in the
    sandbox, under its wall-clock limit). Never raises for any schema.
    """
    validator = _validator_for(schema)
    if validator is None:
        return []
    try:
        with step_budget():
            errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    except (SchemaError, UnknownType, Unresolvable, RecursionError):
        return []
    except BudgetExceeded as exc:
        _log.warning("judge reply not shape-checked on the host: %s", exc)
        return []
    messages: list[str] = []
    for error in errors:
        if error.validator in SHAPE_KEYWORDS:
            messages.extend(m for m in _messages(error) if m not in messages)
    return messages
