"""Conditions: one field of the scenario state (or of a turn) compared with a value.

A condition either names a comparison operator (``op``: ``eq``, ``ne``, ``gt``,
``ge``, ``lt``, ``le``, ``in``, ``contains``, ``exists``, ``truthy``, ``falsy``)
or carries a verification primitive (``verify_with``: ``{"type": "BooleanMatch"}``,
``{"type": "NumericTolerance", "tolerance": 0.1}``, ...), the form the original
framework's checkpoints use. Primitives are rebuilt by class name from the ones
:mod:`verifleet.schemas` exports, never from code in the file.

Field paths are dotted (``parsed.answer``, ``node_results.ask.verify_result``);
:func:`resolve_path` walks mappings and lists and yields ``None`` for anything
missing, so a condition over a field a turn did not produce simply does not hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_serializer, field_validator

from verifleet.templates import VerificationPrimitive
from verifleet.templates.registry import CONDITION_PRIMITIVES, by_name

__all__ = ["Condition", "Operator", "primitive_from", "resolve_path"]

Operator = Literal[
    "eq", "ne", "gt", "ge", "lt", "le", "in", "contains", "exists", "truthy", "falsy"
]

# The primitives a condition may name (the registry says which and why).
_PRIMITIVES = by_name(CONDITION_PRIMITIVES)


def primitive_from(value: object) -> VerificationPrimitive:
    """A primitive from ``{"type": <class name>, **parameters}`` (or a primitive).

    Raises:
        ValueError: not a mapping, no ``type``, an unknown type (the message lists
            the known ones) or parameters the primitive rejects.
    """
    if isinstance(value, VerificationPrimitive):
        return value
    if not isinstance(value, Mapping):
        raise ValueError(f"verify_with must be an object with a 'type', got {value!r}")
    params = dict(value)
    name = params.pop("type", None)
    cls = _PRIMITIVES.get(str(name))
    if cls is None:
        known = ", ".join(sorted(_PRIMITIVES))
        raise ValueError(f"unknown verify_with type {name!r} (known: {known})")
    return cls.model_validate(params)


def resolve_path(root: object, path: str) -> object:
    """The value at dotted ``path`` inside nested mappings/lists, else ``None``."""
    value = root
    for part in path.split("."):
        if isinstance(value, Mapping):
            value = value.get(part)
        elif isinstance(value, list | tuple) and part.lstrip("-").isdigit():
            index = int(part)
            value = value[index] if -len(value) <= index < len(value) else None
        else:
            return None
        if value is None:
            return None
    return value


def _compare(op: Operator, value: Any, expected: Any) -> bool:
    if op == "exists":
        return value is not None
    if op == "truthy":
        return bool(value)
    if op == "falsy":
        return not value
    if op == "eq":
        return bool(value == expected)
    if op == "ne":
        return bool(value != expected)
    if op == "in":
        return value in expected if isinstance(expected, list | tuple | set | str) else False
    if op == "contains":
        return expected in value if isinstance(value, list | tuple | set | str | dict) else False
    if value is None or expected is None:
        return False
    if op == "gt":
        return bool(value > expected)
    if op == "ge":
        return bool(value >= expected)
    if op == "lt":
        return bool(value < expected)
    return bool(value <= expected)


class Condition(BaseModel):
    """``field`` compared with ``expected`` by ``verify_with`` or else by ``op``.

    In our YAML, ``equals: X`` is short for ``op: eq, expected: X``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    field: str
    expected: object = None
    op: Operator = "eq"
    verify_with: VerificationPrimitive | None = None

    @field_validator("verify_with", mode="before")
    @classmethod
    def _primitive(cls, value: object) -> object:
        return None if value is None else primitive_from(value)

    @field_serializer("verify_with")
    def _dump_primitive(self, value: VerificationPrimitive | None) -> dict[str, object] | None:
        return None if value is None else value.describe()

    @classmethod
    def coerce(cls, data: object) -> object:
        """Turn the YAML shorthand ``{field, equals}`` into ``{field, expected}``."""
        if isinstance(data, Mapping) and "equals" in data:
            data = {k: v for k, v in data.items() if k != "equals"} | {
                "expected": data["equals"],
                "op": "eq",
            }
        if isinstance(data, Mapping) and data.get("type") == "state_check":
            # The original framework tags its edge conditions; the tag adds nothing.
            data = {k: v for k, v in data.items() if k != "type"}
        return data

    def holds(self, value: object) -> bool:
        """Whether ``value`` (the resolved field) satisfies the condition; a
        comparison between incomparable values does not hold (never raises)."""
        if self.verify_with is not None:
            return self.verify_with.check(value, self.expected)
        try:
            return _compare(self.op, value, self.expected)
        except TypeError:
            return False

    def check(self, root: object) -> bool:
        """Whether the condition holds for the field of ``root`` it names."""
        return self.holds(resolve_path(root, self.field))
