"""The part of a template-made JSON schema the host may interpret.

A judge schema is produced by template code (``model_json_schema()`` runs in the
sandbox, and ``json_schema_extra`` lets a template put anything in it), so on the
host it is data from an untrusted author. Handing it to ``jsonschema`` as it is
lets that author run a backtracking ``pattern`` against the judge's value while
holding the GIL, make the host fetch a ``$ref`` URL with no timeout, or make
validation exponential with a chain of ``anyOf`` references.

:func:`reduce_schema` keeps only what decides a reply's *shape* (the keywords in
:data:`SHAPE_KEYWORDS` and the structure that leads to them), and only
references inside the document (``#/...``); it refuses schemas beyond
:data:`MAX_SCHEMA_CHARS`, :data:`MAX_DEPTH`, :data:`MAX_NODES` or an expansion of
:data:`MAX_EXPANSION` subschemas applied to one value. :func:`bounded_validator`
builds a validator over the reduced schema whose registry refuses every
retrieval, which evaluates a reference on one part of the reply once, and whose
keyword calls are counted, so one check costs at most :data:`MAX_STEPS` keyword
evaluations. Whatever is refused or runs out of budget
is left unchecked on the host: the template's own validation, inside the
sandbox under its wall-clock limit, still judges the reply.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource

from verifleet.errors import VerifleetError

__all__ = [
    "MAX_DEPTH",
    "MAX_EXPANSION",
    "MAX_NODES",
    "MAX_SCHEMA_CHARS",
    "MAX_STEPS",
    "SHAPE_KEYWORDS",
    "BudgetExceeded",
    "UnsafeSchema",
    "bounded_validator",
    "reduce_schema",
    "step_budget",
]

#: Largest schema (compact JSON, in characters) the host checks replies against.
MAX_SCHEMA_CHARS = 256 * 1024
#: Deepest nesting of subschemas kept.
MAX_DEPTH = 32
#: Most subschemas kept in one schema.
MAX_NODES = 5_000
#: Most subschemas that ``anyOf``/``oneOf``/``allOf``/``$ref`` may apply to one value.
MAX_EXPANSION = 1_000
#: Most keyword evaluations one reply check may cost.
MAX_STEPS = 10_000

#: Keywords whose failure sends a judge back: the reply's shape.
SHAPE_KEYWORDS = frozenset(
    {"type", "required", "additionalProperties", "enum", "const", "anyOf", "oneOf", "items"}
)

# What is kept besides the shape keywords: the structure leading to them.
_SUBSCHEMA = frozenset({"items", "additionalProperties"})
_SUBSCHEMA_MAPS = frozenset({"properties", "$defs", "definitions"})
_SUBSCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SAME_VALUE = ("anyOf", "oneOf", "allOf")
_TYPES = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})


class UnsafeSchema(VerifleetError, ValueError):
    """A schema the host will not check replies against (the message says why)."""


class BudgetExceeded(VerifleetError):
    """One check ran past :data:`MAX_STEPS` keyword evaluations."""


def reduce_schema(schema: object) -> dict[str, object]:
    """The shape-only, local-only copy of ``schema`` (see the module docstring).

    ``pattern``, ``patternProperties``, ``format``, ranges, ``$id``, ``$schema``,
    ``$anchor``, ``$dynamicRef`` and every other keyword are dropped; a ``$ref``
    that does not start with ``#`` becomes an empty (accept-anything) schema, so
    a reply is never checked against what another document says.

    Raises:
        UnsafeSchema: ``schema`` is not a JSON object, or exceeds the size, depth,
            node or expansion bounds; the message names the bound.
    """
    if not isinstance(schema, dict):
        raise UnsafeSchema("the schema is not a JSON object")
    try:
        size = len(json.dumps(schema, separators=(",", ":"), default=str))
    except (RecursionError, ValueError) as exc:
        raise UnsafeSchema(f"the schema cannot be written as JSON ({type(exc).__name__})") from None
    if size > MAX_SCHEMA_CHARS:
        raise UnsafeSchema(f"the schema is {size} characters, over {MAX_SCHEMA_CHARS}")
    counter = [0]
    reduced = _reduce(schema, 0, counter)
    assert isinstance(reduced, dict)  # a dict reduces to a dict
    _check_expansion(reduced)
    return reduced


def _reduce(node: object, depth: int, counter: list[int]) -> object:
    if isinstance(node, bool):
        return node
    if not isinstance(node, dict):
        return {}  # not a schema: accept anything rather than guess
    if depth > MAX_DEPTH:
        raise UnsafeSchema(f"the schema nests deeper than {MAX_DEPTH}")
    counter[0] += 1
    if counter[0] > MAX_NODES:
        raise UnsafeSchema(f"the schema has more than {MAX_NODES} subschemas")
    if depth and "$id" in node:
        # A nested $id moves the base of the references below it; dropping it
        # could point them elsewhere, so such a schema is not checked here.
        raise UnsafeSchema("the schema has a nested $id")
    # Keywords of the schema being reduced: their values are whatever it holds.
    out: dict[str, Any] = {}
    ref = node.get("$ref")
    if isinstance(ref, str):
        if not ref.startswith("#"):
            return {}  # another document: never fetched, never checked here
        out["$ref"] = ref
    for key, value in node.items():
        if key in _SUBSCHEMA:
            out[key] = _reduce(value, depth + 1, counter)
        elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            out[key] = {str(k): _reduce(v, depth + 1, counter) for k, v in value.items()}
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list) and value:
            out[key] = [_reduce(v, depth + 1, counter) for v in value]
        elif key == "type":
            kinds = [value] if isinstance(value, str) else value
            if isinstance(kinds, list) and kinds and all(k in _TYPES for k in kinds):
                out[key] = value
        elif key == "required" and isinstance(value, list):
            out[key] = [name for name in value if isinstance(name, str)]
        elif (key == "enum" and isinstance(value, list)) or key == "const":
            out[key] = value
    if "patternProperties" in node:
        # Which fields are "additional" depends on the patterns, which are not
        # evaluated here: no field is called unexpected.
        out.pop("additionalProperties", None)
    if "oneOf" in out:
        # Branches may differ only by dropped keywords (a pattern, a range), so
        # "exactly one" could wrongly fail; "at least one" only loosens.
        alternatives = out.pop("oneOf")
        if "anyOf" in out:
            out.setdefault("allOf", []).append({"anyOf": alternatives})
        else:
            out["anyOf"] = alternatives
    return out


def _resolve_local(root: dict[str, object], ref: str) -> object:
    """The subschema a ``#...`` pointer names in ``root``, or None."""
    target: object = root
    for raw in ref[1:].split("/")[1:] if ref != "#" else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            return None
    return target


def _check_expansion(root: dict[str, object]) -> None:
    """Refuse a schema where one value would be checked against more than
    :data:`MAX_EXPANSION` subschemas through ``anyOf``/``oneOf``/``allOf``/``$ref``
    (a doubling chain reaches millions), or against itself for ever (a reference
    cycle that never descends into a property or an item)."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def expansion(node: object) -> int:
        if not isinstance(node, dict):
            return 1
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise UnsafeSchema("the schema refers to itself without descending into a value")
        active.add(key)
        total = 1
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = _resolve_local(root, ref)
            if target is not None:
                total += expansion(target)
        for keyword in _SAME_VALUE:
            for child in node.get(keyword) or []:
                total += expansion(child)
                if total > MAX_EXPANSION:
                    break
        active.discard(key)
        if total > MAX_EXPANSION:
            raise UnsafeSchema(
                f"the schema applies more than {MAX_EXPANSION} subschemas to one value"
            )
        sizes[key] = total
        return total

    def walk(node: object) -> Iterator[object]:
        # Every subschema once: each is a starting point of some value's check.
        stack = [node]
        while stack:
            item = stack.pop()
            if not isinstance(item, dict):
                continue
            yield item
            for key, value in item.items():
                if key in _SUBSCHEMA:
                    stack.append(value)
                elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
                    stack.extend(value.values())
                elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
                    stack.extend(value)

    for subschema in walk(root):
        expansion(subschema)


_scope = threading.local()


@contextmanager
def step_budget(steps: int = MAX_STEPS) -> Iterator[None]:
    """Arm the keyword counter of :func:`bounded_validator` for one check in
    this thread: past ``steps`` evaluations a keyword raises
    :class:`BudgetExceeded`. Within the check, a reference already evaluated on
    the same part of the reply is not evaluated again (a recursive schema with
    alternatives would otherwise try each sub-value exponentially often)."""
    _scope.left = steps
    _scope.seen = {}
    try:
        yield
    finally:
        _scope.left = None
        _scope.seen = None


def _spend() -> None:
    left = getattr(_scope, "left", None)
    if left is not None:
        if left <= 0:
            raise BudgetExceeded("the check took more than its budget of keyword evaluations")
        _scope.left = left - 1


def _counted(function: Callable[..., object]) -> Callable[..., object]:
    def keyword(validator: object, value: object, instance: object, schema: object) -> object:
        _spend()
        return function(validator, value, instance, schema)

    return keyword


def _remembered_ref(
    function: Callable[..., Iterator[ValidationError]],
) -> Callable[..., Iterator[ValidationError]]:
    def keyword(
        validator: object, ref: object, instance: object, schema: object
    ) -> Iterator[ValidationError]:
        _spend()
        seen: dict[tuple[str, int], bool] | None = getattr(_scope, "seen", None)
        if not isinstance(instance, dict | list):
            # A scalar cannot descend: its cost is bounded by MAX_EXPANSION, and
            # equal scalars share an id, so remembering would drop their messages.
            seen = None
        key = (str(ref), id(instance))  # the reply is alive for the whole check
        if seen is not None and key in seen:
            if not seen[key]:
                # Only alternatives ask again, and they report one message of
                # their own: a summary is enough here.
                yield ValidationError(f"does not match {ref}", validator="$ref")
            return
        errors = list(function(validator, ref, instance, schema))
        if seen is not None:
            seen[key] = not errors
        yield from errors

    return keyword


def _refuse(uri: str) -> Resource[object]:
    # A reduced schema has no remote reference; should one ever reach the
    # validator, it is refused here instead of being fetched.
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # attrs class mypy cannot see


_KEPT = SHAPE_KEYWORDS | {"$ref", "allOf", "prefixItems", "properties"}
_BoundedValidator = extend(
    Draft202012Validator,
    validators={
        name: (_remembered_ref if name == "$ref" else _counted)(function)
        for name, function in Draft202012Validator.VALIDATORS.items()
        if name in _KEPT
    },
)
_REGISTRY: Registry[object] = Registry(retrieve=_refuse)  # type: ignore[call-arg]  # attrs


def bounded_validator(reduced: dict[str, object]) -> Validator:
    """A draft 2020-12 validator over a :func:`reduce_schema` result: no format
    checking, a registry that retrieves nothing, keyword calls counted against
    :class:`step_budget` (iterate its errors inside one)."""
    validator: Validator = _BoundedValidator(reduced, registry=_REGISTRY)
    return validator
