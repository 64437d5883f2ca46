"""The tabular layout of a result: one row per ``VerificationResult``.

Columns come in three groups, in this order:

1. **Source scalars** (read back): every metadata field as a flat column, with the
   two model identities split into ``answering_interface``, ``answering_model_name``,
   ``answering_tools`` (and the same for ``parsing``); then the root fields
   ``evaluation_input``, ``used_full_trace``, ``trace_extraction_error``.
2. **Derived summary** (written, never read back): ``result_key`` (when a job id is
   known), the display strings ``answering_model``/``parsing_model``, the template
   outcome and check flags (``verify_result``, ``verify_granular_result`` as a float
   when numeric, ``abstention_detected``, ...), the section ``*_performed`` flags and
   ``input_tokens``/``output_tokens``/``total_tokens`` from
   ``usage_metadata["total"]``. They duplicate section content so that people can
   filter and group without unpacking structs; their cost is a few bytes per row.
3. **Sections** (read back): ``template``, ``rubric``, ``deep_judgment``,
   ``deep_judgment_rubric`` as nullable Arrow structs; a null struct is an absent
   section.

The same flat columns (groups 1 and 2) are the CSV columns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from verifleet.schemas import VerificationResult, VerificationResultMetadata, compute_unit_key

from .arrow_types import FieldCodec, codec_for_annotation

__all__ = [
    "ALL_COLUMNS",
    "FLAT_COLUMNS",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "RESULT_ARROW_SCHEMA",
    "SECTION_NAMES",
    "SOURCE_COLUMNS",
    "SUMMARY_COLUMNS",
    "Column",
    "result_to_row",
    "row_to_result",
]

FORMAT_NAME = "verifleet-results"
FORMAT_VERSION = 1

SECTION_NAMES: tuple[str, ...] = ("template", "rubric", "deep_judgment", "deep_judgment_rubric")

# Template fields copied to flat columns: the outcome and every check's flags.
_TEMPLATE_SUMMARY: tuple[str, ...] = (
    "template_verification_performed",
    "verify_result",
    "embedding_check_performed",
    "embedding_similarity_score",
    "embedding_override_applied",
    "embedding_model_used",
    "regex_validations_performed",
    "regex_overall_success",
    "abstention_check_performed",
    "abstention_detected",
    "abstention_override_applied",
    "sufficiency_check_performed",
    "sufficiency_detected",
    "sufficiency_override_applied",
    "recursion_limit_reached",
)
_PERFORMED_FLAGS: tuple[tuple[str, str], ...] = (
    ("rubric", "rubric_evaluation_performed"),
    ("deep_judgment", "deep_judgment_performed"),
    ("deep_judgment_rubric", "deep_judgment_rubric_performed"),
)
_TOKEN_KINDS: tuple[str, ...] = ("input_tokens", "output_tokens", "total_tokens")

Dumped = dict[str, Any]
Extractor = Callable[[VerificationResult, Dumped, "str | None"], Any]


@dataclass(frozen=True)
class Column:
    """One top-level column.

    Attributes:
        codec: Name, Arrow type and value conversion.
        path: Where a source column's value lives in ``model_dump(mode="json")``;
            empty for derived columns.
        extract: For derived columns: ``(result, dumped, job_id) -> value``.
    """

    codec: FieldCodec
    path: tuple[str, ...] = ()
    extract: Extractor | None = None

    @property
    def name(self) -> str:
        """The column name."""
        return self.codec.name


def _section_field(section: str, name: str) -> Extractor:
    def extract(_: VerificationResult, dumped: Dumped, __: str | None) -> Any:
        body = dumped.get(section)
        return None if body is None else body.get(name)

    return extract


def _numeric_granular(_: VerificationResult, dumped: Dumped, __: str | None) -> float | None:
    # bool is numeric to Python but a verdict, not a score: keep it out of the float.
    value = (dumped.get("template") or {}).get("verify_granular_result")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _tokens(kind: str) -> Extractor:
    def extract(_: VerificationResult, dumped: Dumped, __: str | None) -> int | None:
        usage = (dumped.get("template") or {}).get("usage_metadata")
        total = usage.get("total") if isinstance(usage, Mapping) else None
        value = total.get(kind) if isinstance(total, Mapping) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return extract


def _result_key(result: VerificationResult, _: Dumped, job_id: str | None) -> str | None:
    if job_id is None:
        return None
    meta = result.metadata
    return compute_unit_key(
        job_id=job_id,
        question_id=meta.question_id,
        template_id=meta.template_id,
        answering_key=meta.answering.canonical_key,
        parsing_key=meta.parsing.canonical_key,
        replicate=meta.replicate,
    )


def _source_columns() -> tuple[Column, ...]:
    columns: list[Column] = []
    for name, info in VerificationResultMetadata.model_fields.items():
        codec = codec_for_annotation(name, info.annotation)
        if codec.kind == "struct":
            # Model identities (and any future fixed-shape metadata part) are flattened
            # one level so that "answering_model_name" is a plain, filterable column.
            columns.extend(
                Column(_renamed(child, f"{name}_{child.name}"), ("metadata", name, child.name))
                for child in codec.children
            )
        else:
            columns.append(Column(codec, ("metadata", name)))
    for name, info in VerificationResult.model_fields.items():
        if name != "metadata" and name not in SECTION_NAMES:
            columns.append(Column(codec_for_annotation(name, info.annotation), (name,)))
    return tuple(columns)


def _renamed(codec: FieldCodec, name: str) -> FieldCodec:
    return FieldCodec(name, codec.arrow_type, codec.kind, codec.children, codec._busy)


def _summary_columns() -> tuple[Column, ...]:
    template_fields = VerificationResult.model_fields["template"].annotation
    template_codec = codec_for_annotation("template", template_fields)
    template_children = {child.name: child for child in template_codec.children}
    columns = [
        Column(FieldCodec("result_key", pa.string(), "plain"), extract=_result_key),
        Column(
            FieldCodec("answering_model", pa.string(), "plain"),
            extract=lambda r, _d, _j: r.metadata.answering.display_string,
        ),
        Column(
            FieldCodec("parsing_model", pa.string(), "plain"),
            extract=lambda r, _d, _j: r.metadata.parsing.display_string,
        ),
    ]
    for name in _TEMPLATE_SUMMARY:
        child = template_children.get(name)
        if child is not None and child.kind == "plain":
            columns.append(Column(child, extract=_section_field("template", name)))
    columns.append(
        Column(
            FieldCodec("verify_granular_result", pa.float64(), "plain"), extract=_numeric_granular
        )
    )
    for section, flag in _PERFORMED_FLAGS:
        columns.append(
            Column(FieldCodec(flag, pa.bool_(), "plain"), extract=_section_field(section, flag))
        )
    for kind in _TOKEN_KINDS:
        columns.append(Column(FieldCodec(kind, pa.int64(), "plain"), extract=_tokens(kind)))
    return tuple(columns)


def _section_columns() -> tuple[Column, ...]:
    return tuple(
        Column(
            codec_for_annotation(name, VerificationResult.model_fields[name].annotation), (name,)
        )
        for name in SECTION_NAMES
    )


def _check_unique(columns: tuple[Column, ...]) -> tuple[Column, ...]:
    counts = Counter(column.name for column in columns)
    clashes = [name for name, count in counts.items() if count > 1]
    if clashes:
        # A model field whose flat name collides with another column would silently
        # overwrite it; fail at import so the test suite catches it at once.
        raise RuntimeError(f"result columns defined twice: {sorted(clashes)}")
    return columns


SOURCE_COLUMNS: tuple[Column, ...] = _source_columns() + _section_columns()
"""Columns that together rebuild a result (flat scalars first, then sections)."""

SUMMARY_COLUMNS: tuple[Column, ...] = _summary_columns()
"""Derived columns for filtering and grouping; ignored on read."""

_FLAT_SOURCE = SOURCE_COLUMNS[: -len(SECTION_NAMES)]
_SECTIONS = SOURCE_COLUMNS[-len(SECTION_NAMES) :]
# Sections come last on purpose: encoding a section rewrites its free-form fields in
# the dumped dict as JSON text, and the summary extractors must see them before that.
ALL_COLUMNS: tuple[Column, ...] = _check_unique(_FLAT_SOURCE + SUMMARY_COLUMNS + _SECTIONS)

FLAT_COLUMNS: tuple[Column, ...] = ALL_COLUMNS[: -len(SECTION_NAMES)]
"""Every column except the section structs: the CSV columns."""

RESULT_ARROW_SCHEMA: pa.Schema = pa.schema(
    [column.codec.arrow_field() for column in ALL_COLUMNS],
    metadata={"verifleet.format": FORMAT_NAME, "verifleet.version": str(FORMAT_VERSION)},
)
"""The explicit Arrow schema of a results Parquet file (one row per result)."""


def result_to_row(
    result: VerificationResult, job_id: str | None = None, *, sections: bool = True
) -> dict[str, Any]:
    """The Arrow-ready row of ``result``, keyed by column name in schema order.

    Args:
        result: The result to flatten.
        job_id: When given, fills ``result_key`` with the deterministic unit key.
        sections: False leaves out the section structs (the :data:`FLAT_COLUMNS`).

    Raises:
        TypeError: a free-form field holds a value JSON cannot represent.
    """
    dumped = result.model_dump(mode="json")
    row: dict[str, Any] = {}
    for column in ALL_COLUMNS if sections else FLAT_COLUMNS:
        if column.extract is not None:
            row[column.name] = column.extract(result, dumped, job_id)
            continue
        value: Any = dumped
        for step in column.path:
            value = value.get(step) if value is not None else None
        row[column.name] = column.codec.encode(value)
    return row


def row_to_result(row: Mapping[str, Any]) -> VerificationResult:
    """Rebuild a result from a row holding (a subset of) the source columns.

    A missing column leaves its field to the model default (files written before the
    field existed still read). Derived columns are ignored.

    Raises:
        json.JSONDecodeError: a JSON text column is corrupt.
        pydantic.ValidationError: the values do not form a valid result.
    """
    data: dict[str, Any] = {"metadata": {}}
    for column in SOURCE_COLUMNS:
        if column.name not in row:
            continue
        target = data
        for step in column.path[:-1]:
            target = target.setdefault(step, {})
        target[column.path[-1]] = column.codec.decode(row[column.name])
    return VerificationResult.model_validate(data)
