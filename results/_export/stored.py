"""Arrow batches straight from stored result JSON, without ``VerificationResult`` models.

The result store keeps each result as the JSON of ``model_dump_json()``. Parsed, that
JSON has the very structure ``model_dump(mode="json")`` returns for the validated
model, so it can go to Arrow without the model (validating every result and dumping
it again would be most of exporting a job from Redis).

A page of results becomes one batch column-wise: after the free-form fields are
encoded in place (by the same codecs as :func:`.layout.result_to_row`), the whole
page is converted by Arrow as one struct array of the result model's own Arrow type,
and the flat columns are that struct's children. Only what no field spells out
(the row's key, the display strings, the computed summary values) is done per row
in Python, with the functions the row path uses. The batch equals
``RecordBatch.from_pylist([result_to_row(r) ...])`` of the validated results.

The shortcut is only taken for a result with exactly the shape the current models
dump (every field, no unknown one, at every fixed-shape level; model identities in
canonical form; a result id). Anything else (a result written by an older or newer
verifleet, or by hand) is validated with ``VerificationResult.model_validate_json``
first, so defaults are filled in and invalid data rejected exactly as on the model
path.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pydantic_core

from verifleet.errors import StoredResultError
from verifleet.schemas import ModelIdentity, ResultIdentity, VerificationResult
from verifleet.store import keyed_question_id, result_key

from .arrow_types import FieldCodec, codec_for_model
from .layout import (
    ALL_COLUMNS,
    COMPUTED_SUMMARY,
    COPIED_SUMMARY,
    LABEL_COLUMNS,
    NAME_COLUMNS,
    RESULT_ARROW_SCHEMA,
    RowNames,
    batch_of_rows,
    computed_summary,
    result_to_row,
)

__all__ = ["StoredResultError", "stored_batch", "validated_row"]


@dataclass(frozen=True)
class _Shape:
    """The keys a dumped model has, and the shapes of its nested model fields."""

    keys: frozenset[str]
    nested: tuple[tuple[str, _Shape], ...]

    @classmethod
    def of(cls, codec: FieldCodec) -> _Shape:
        # Built from the codecs behind the Arrow schema: a field added to a model
        # changes the expected shape and the columns together.
        return cls(
            frozenset(child.name for child in codec.children),
            tuple(
                (child.name, cls.of(child)) for child in codec.children if child.kind == "struct"
            ),
        )

    def matches(self, value: Any) -> bool:
        """Whether ``value`` is a dict with exactly these keys, nested alike.

        A nested model field may be None (an absent optional section).
        """
        if type(value) is not dict or value.keys() != self.keys:
            return False
        # One level inlined: runs for every exported result, and most nested models
        # (the sections) have no nested model of their own.
        for name, shape in self.nested:
            child = value[name]
            if child is None:
                continue
            if type(child) is not dict or child.keys() != shape.keys:
                return False
            if shape.nested and not shape.matches(child):
                return False
        return True


_RESULT_CODEC = codec_for_model("result", VerificationResult)
_RESULT_SHAPE = _Shape.of(_RESULT_CODEC)
_RESULT_TYPE: pa.StructType = _RESULT_CODEC.arrow_type

# An identity's field values as a tuple, with list fields (the tools) as tuples so
# that the tuple can key a cache.
_IDENTITY_FIELDS = tuple(ModelIdentity.model_fields)
_identity_values = operator.itemgetter(*_IDENTITY_FIELDS)
_IDENTITY_LISTS = tuple(
    index
    for index, child in enumerate(codec_for_model("identity", ModelIdentity).children)
    if pa.types.is_list(child.arrow_type)
)


@functools.lru_cache(maxsize=4096)
def _identity(values: tuple[Any, ...]) -> tuple[tuple[Any, ...], str, str] | None:
    """The canonical values, display string and canonical key of one identity.

    A job has a handful of distinct identities, so each is validated once by the
    model itself and its strings come from the model's own properties. None when the
    values do not form a valid identity (the caller then validates the result).
    """
    try:
        identity = ModelIdentity.model_validate(
            {
                name: list(value) if index in _IDENTITY_LISTS else value
                for index, (name, value) in enumerate(zip(_IDENTITY_FIELDS, values, strict=True))
            }
        )
    except ValueError:
        return None
    canonical = _frozen(_identity_values(identity.model_dump(mode="json")))
    return canonical, identity.display_string, identity.canonical_key


def _frozen(values: tuple[Any, ...]) -> tuple[Any, ...]:
    if not _IDENTITY_LISTS:
        return values
    listed = list(values)
    for index in _IDENTITY_LISTS:
        if type(listed[index]) is not list:
            raise TypeError("not a list")
        listed[index] = tuple(listed[index])
    return tuple(listed)


def _identity_of(dumped: dict[str, Any]) -> tuple[str, str] | None:
    """Display string and canonical key of a dumped identity stored in canonical form
    (valid, tools sorted), else None."""
    try:
        values = _frozen(_identity_values(dumped))
        known = _identity(values)
    except TypeError:  # a list where a scalar belongs, or the reverse
        return None
    if known is None or known[0] != values:
        return None
    return known[1], known[2]


def _fast_names(dumped: Any, job_id: str | None) -> RowNames | None:
    """The row names of a parsed result that may skip validation, else None."""
    if not _RESULT_SHAPE.matches(dumped):
        return None
    meta: dict[str, Any] = dumped["metadata"]
    result_id = meta["result_id"]
    # An empty id is filled in by the model's validator: leave that to it.
    if type(result_id) is not str or not result_id:
        return None
    answering = _identity_of(meta["answering"])
    parsing = _identity_of(meta["parsing"])
    if answering is None or parsing is None:
        return None
    key = None
    if job_id is not None:
        # The fields of store.result_key, read from the dump; the
        # equality tests against the model path catch any drift between the two.
        key = ResultIdentity(
            question_id=keyed_question_id(
                meta["question_id"],
                meta.get("scenario_id"),
                meta.get("scenario_turn"),
                meta.get("scenario_node"),
            ),
            template_id=meta["template_id"],
            answering_key=answering[1],
            parsing_key=parsing[1],
            replicate=meta["replicate"],
        ).key(job_id)
    return key, answering[0], parsing[0]


def _validated(data: bytes, index: int) -> VerificationResult:
    try:
        return VerificationResult.model_validate_json(data)
    except ValueError as exc:  # pydantic.ValidationError is a ValueError
        raise StoredResultError(index, f"not a valid result: {exc}") from exc


def validated_row(data: bytes, job_id: str | None, index: int = 0) -> dict[str, Any]:
    """The row of stored JSON the reference way: validate, then :func:`result_to_row`.

    Raises:
        StoredResultError: ``data`` is not a valid result.
        ValueError: a free-form field holds a value JSON cannot represent.
    """
    return result_to_row(_validated(data, index), job_id)


def _dumped(data: bytes, index: int, job_id: str | None) -> tuple[dict[str, Any], RowNames]:
    """The dumped form of one stored result and its row names."""
    try:
        dumped = pydantic_core.from_json(data)
    except ValueError as exc:
        raise StoredResultError(index, f"not valid JSON: {exc}") from exc
    names = _fast_names(dumped, job_id)
    if names is not None:
        return dumped, names
    result = _validated(data, index)
    meta = result.metadata
    names = (
        None if job_id is None else result_key(result, job_id=job_id),
        meta.answering.display_string,
        meta.parsing.display_string,
    )
    return result.model_dump(mode="json"), names


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector while a batch is built.

    A batch allocates tens of thousands of containers that all stay alive until it
    is converted, so the collector keeps promoting them and then walks every live
    object of the process for nothing: parsed JSON holds no cycles. Reference
    counting still frees everything; the collector is on again afterwards (unless
    it was off before).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _flat(array: pa.StructArray, names: Sequence[str]) -> dict[str, pa.Array]:
    # flatten() applies the struct's own nulls to its children: a field of an absent
    # section is null, as the row path makes it.
    return dict(zip(names, array.flatten(), strict=True))


def stored_batch(pages: Sequence[bytes], job_id: str | None = None) -> pa.RecordBatch:
    """One record batch of :data:`.layout.RESULT_ARROW_SCHEMA` from stored results.

    Args:
        pages: Stored results, each the (decompressed) ``model_dump_json()`` text.
        job_id: When given, fills ``result_key`` as :func:`.layout.result_to_row` does.

    Returns:
        The batch, equal to ``RecordBatch.from_pylist`` of the rows of the validated
        results.

    Raises:
        StoredResultError: a result is not JSON or not a valid result (its index
            in ``pages`` is on the error).
        ValueError: a free-form field holds a value JSON cannot represent.
        OverflowError, pyarrow.ArrowException: a value has no Arrow form (an int
            beyond 64 bits), as on the model path.
    """
    dumps: list[dict[str, Any]] = []
    names: list[RowNames] = []
    computed: list[tuple[Any, ...]] = []
    encode = _RESULT_CODEC.encode
    try:
        with _no_cycle_collection():
            for index, data in enumerate(pages):
                dumped, row_names = _dumped(data, index, job_id)
                computed.append(computed_summary(dumped["template"]))
                # In place, after computed_summary: it reads free-form fields as values.
                dumps.append(encode(dumped))
                names.append(row_names)
            return _assemble(dumps, names, computed)
    except (OverflowError, pa.ArrowException):
        # A value Arrow refuses that validation may coerce (the shape check does not
        # look at types, e.g. "3" for an int): build the batch the model way, which
        # then converts it as the model path does, or fails as it does.
        rows = [validated_row(data, job_id, index) for index, data in enumerate(pages)]
        return batch_of_rows(rows)


def _assemble(
    dumps: list[dict[str, Any]], names: list[RowNames], computed: list[tuple[Any, ...]]
) -> pa.RecordBatch:
    results = pa.array(dumps, type=_RESULT_TYPE)
    top = _flat(results, [field.name for field in _RESULT_TYPE])
    # Every array reachable by a source column's path: ("metadata", "answering",
    # "model_name") -> the answering_model_name column, and so on.
    by_path: dict[tuple[str, ...], pa.Array] = {(name,): array for name, array in top.items()}
    pending = list(by_path.items())
    while pending:
        path, array = pending.pop()
        if pa.types.is_struct(array.type):
            for name, child in _flat(array, [field.name for field in array.type]).items():
                by_path[(*path, name)] = child
                pending.append(((*path, name), child))
    columns: dict[str, pa.Array] = {}
    for column in ALL_COLUMNS:
        if column.path:
            columns[column.name] = by_path[column.path]
    for section, name in COPIED_SUMMARY:
        columns[name] = by_path[(section, name)]
    for position, name in enumerate(NAME_COLUMNS):
        columns[name] = pa.array([row[position] for row in names], type=pa.string())
    for column in LABEL_COLUMNS:
        # Stored results come from a job's store, which keeps no labels.
        columns[column.name] = pa.nulls(len(names), RESULT_ARROW_SCHEMA.field(column.name).type)
    for position, name in enumerate(COMPUTED_SUMMARY):
        arrow_type = RESULT_ARROW_SCHEMA.field(name).type
        columns[name] = pa.array([row[position] for row in computed], type=arrow_type)
    return pa.RecordBatch.from_arrays(
        [columns[field.name] for field in RESULT_ARROW_SCHEMA], schema=RESULT_ARROW_SCHEMA
    )
