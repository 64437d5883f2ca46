"""Map pydantic field annotations to explicit Arrow types, and values to and from them.

The result models are the single source of truth for the Parquet layout: each field
gets its Arrow type from its annotation, so a field added to a section appears in the
file without touching the exporter. Three kinds of field exist:

* ``plain``: scalars (``str``, ``int``, ``float``, ``bool``, string/int literals and
  enums) and lists of them. They are stored natively and need no conversion.
* ``struct``: a nested pydantic model with a fixed shape, stored as an Arrow struct.
* ``json``: everything free-form (``dict``, ``Any``, unions of several types, lists
  of dicts, ...). Stored as compact JSON text; ``None`` stays an Arrow null so that
  ``None`` and ``{}`` remain distinct.

Values are converted from and to the ``model_dump(mode="json")`` form, which is what
``model_validate`` accepts back.
"""

from __future__ import annotations

import enum
import types
import typing
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Union

import pyarrow as pa
import pydantic_core
from pydantic import BaseModel

__all__ = [
    "FieldCodec",
    "codec_for_annotation",
    "codec_for_model",
    "dumps_json",
    "loads_json",
]

CodecKind = Literal["plain", "struct", "json"]

_SCALARS: dict[type, pa.DataType] = {
    bool: pa.bool_(),
    int: pa.int64(),
    float: pa.float64(),
    str: pa.string(),
}


def dumps_json(value: Any) -> str:
    """Compact, unicode-preserving JSON text of a ``model_dump(mode="json")`` value.

    NaN and infinities are written as the ``NaN``/``Infinity`` constants (which
    :func:`loads_json` reads back) rather than lost; big ints stay exact.

    Raises:
        pydantic_core.PydanticSerializationError: ``value`` holds something JSON
            cannot represent.
    """
    # pydantic-core's Rust encoder, not json.dumps: this runs for every free-form
    # field of every result.
    return pydantic_core.to_json(value, inf_nan_mode="constants").decode()


def loads_json(text: str) -> Any:
    """Parse text written by :func:`dumps_json`.

    Raises:
        ValueError: the text is not valid JSON.
    """
    return pydantic_core.from_json(text, allow_inf_nan=True)


@dataclass(frozen=True)
class FieldCodec:
    """How one model field is stored in Arrow.

    Attributes:
        name: The field name (also the Arrow field name).
        arrow_type: The declared Arrow type.
        kind: ``plain``, ``struct`` or ``json`` (see the module docstring).
        children: For ``struct``: one codec per field of the nested model.
    """

    name: str
    arrow_type: pa.DataType
    kind: CodecKind
    children: tuple[FieldCodec, ...] = ()
    # Only the children that need any conversion; plain ones pass through untouched,
    # which keeps per-row work proportional to the free-form fields.
    _busy: tuple[FieldCodec, ...] = field(default=(), compare=False, repr=False)

    @property
    def needs_conversion(self) -> bool:
        """Whether values of this field differ between dumped and Arrow form."""
        return self.kind == "json" or (self.kind == "struct" and bool(self._busy))

    def renamed(self, name: str) -> FieldCodec:
        """The same codec under another column name."""
        return replace(self, name=name)

    def arrow_field(self) -> pa.Field:
        """The Arrow field; always nullable, as absent sections null every child."""
        return pa.field(self.name, self.arrow_type, nullable=True)

    def encode(self, value: Any) -> Any:
        """Turn a dumped value into the value Arrow stores.

        A ``struct`` value (a dict) is converted in place and returned.

        Raises:
            pydantic_core.PydanticSerializationError: a free-form value is not
                JSON-serialisable.
        """
        if value is None or self.kind == "plain":
            return value
        if self.kind == "json":
            return dumps_json(value)
        # Hot: runs for every free-form field of every exported result, hence the
        # inlined None and JSON cases (a call less per field).
        for child in self._busy:
            name = child.name
            field_value = value.get(name)
            if field_value is None:
                value[name] = None
            elif child.kind == "json":
                value[name] = dumps_json(field_value)
            else:
                value[name] = child.encode(field_value)
        return value

    def decode(self, value: Any) -> Any:
        """Turn a value read from Arrow back into its dumped form.

        A ``struct`` value (a dict) is converted in place and returned.

        Raises:
            ValueError: a JSON text column holds invalid JSON.
        """
        if value is None or self.kind == "plain":
            return value
        if self.kind == "json":
            return loads_json(value)
        for child in self._busy:
            if child.name in value:
                value[child.name] = child.decode(value[child.name])
        return value


def _json(name: str) -> FieldCodec:
    return FieldCodec(name, pa.string(), "json")


def _plain_type(annotation: Any) -> pa.DataType | None:
    """The Arrow type of a scalar annotation, or None if it is not a plain scalar."""
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    if typing.get_origin(annotation) is Literal:
        kinds = {type(arg) for arg in typing.get_args(annotation)}
        # bool is an int subclass: a Literal mixing them must not become int64.
        return _SCALARS[kinds.pop()] if len(kinds) == 1 and kinds <= {str, int} else None
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        kinds = {type(member.value) for member in annotation}
        return _SCALARS[kinds.pop()] if len(kinds) == 1 and kinds <= {str, int} else None
    return None


def _strip_optional(annotation: Any) -> tuple[Any, bool]:
    """``X | None`` -> ``(X, True)``; other unions are returned unchanged."""
    if typing.get_origin(annotation) in (Union, types.UnionType):
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(args) == 1:
            return args[0], True
    return annotation, False


def codec_for_annotation(name: str, annotation: Any) -> FieldCodec:
    """The codec of a field called ``name`` with the given (resolved) annotation.

    Never raises: an annotation without a native mapping is stored as JSON text.
    """
    inner, _ = _strip_optional(annotation)
    scalar = _plain_type(inner)
    if scalar is not None:
        return FieldCodec(name, scalar, "plain")
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        return codec_for_model(name, inner)
    if typing.get_origin(inner) is list:
        (item,) = typing.get_args(inner) or (Any,)
        item_type = _plain_type(_strip_optional(item)[0])
        if item_type is not None:
            return FieldCodec(name, pa.list_(item_type), "plain")
    return _json(name)


def codec_for_model(name: str, model: type[BaseModel]) -> FieldCodec:
    """A ``struct`` codec with one child per field of ``model``, in declaration order.

    Never raises (see :func:`codec_for_annotation`).
    """
    children = tuple(
        codec_for_annotation(field_name, info.annotation)
        for field_name, info in model.model_fields.items()
    )
    struct_type = pa.struct([child.arrow_field() for child in children])
    busy = tuple(child for child in children if child.needs_conversion)
    return FieldCodec(name, struct_type, "struct", children, busy)
