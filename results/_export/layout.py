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
   ``input_tokens``/``output_tokens``/``total_tokens``, ``cost_usd`` and
   ``cache_hits`` from ``usage_metadata["total"]``. They duplicate section content so that people can
   filter and group without unpacking structs; their cost is a few bytes per row.
3. **Human labels** (written, never read back): ``label_correct`` and
   ``label_note``, a person's word on the result's answer from the labels file
   beside the results (``<file>.labels.jsonl``) when the file was written; null
   when the answer has no label. They never change a verdict.
4. **Sections** (read back): ``template``, ``rubric``, ``deep_judgment``,
   ``deep_judgment_rubric`` as nullable Arrow structs; a null struct is an absent
   section.

The same flat columns (groups 1 to 3) are the CSV columns. Rows are built here
from models (:func:`result_to_row`); :mod:`.stored` builds the same columns from
stored JSON, from the tables below (:data:`NAME_COLUMNS`, :data:`COPIED_SUMMARY`,
:data:`COMPUTED_SUMMARY`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from verifleet.schemas import VerificationResult, VerificationResultMetadata
from verifleet.store import result_key

from .arrow_types import FieldCodec, codec_for_annotation

__all__ = [
    "ALL_COLUMNS",
    "COMPUTED_SUMMARY",
    "COPIED_SUMMARY",
    "FLAT_COLUMNS",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "LABEL_COLUMNS",
    "NAME_COLUMNS",
    "RESULT_ARROW_SCHEMA",
    "SECTION_NAMES",
    "SOURCE_COLUMNS",
    "SUMMARY_COLUMNS",
    "Column",
    "LabelKey",
    "Labels",
    "RowNames",
    "batch_of_rows",
    "computed_summary",
    "fill_label",
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
# Cost (null when the run had no price for the models) and call-cache hits.
_COST_KINDS: tuple[str, ...] = ("cost_usd", "cache_hits")

Dumped = dict[str, Any]

RowNames = tuple[str | None, str, str]
"""The summary values a dumped result does not spell out: ``result_key`` (None
without a job id) and the display strings of the answering and parsing models."""


LabelKey = tuple[str, str, int | None]
"""The answer a label is about: question id, answering model canonical key, replicate."""

Labels = Mapping[LabelKey, tuple[bool, str | None]]
"""Human labels by answer: (right or wrong, note)."""


@dataclass(frozen=True)
class Column:
    """One top-level column.

    Attributes:
        codec: Name, Arrow type and value conversion.
        path: Where a source column's value lives in ``model_dump(mode="json")``;
            empty for derived (summary) columns.
    """

    codec: FieldCodec
    path: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The column name."""
        return self.codec.name


def _score(value: Any) -> float | None:
    # bool is numeric to Python but a verdict, not a score: keep it out of the float.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def computed_summary(template: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """The :data:`COMPUTED_SUMMARY` values of a dumped template section (or None).

    Reads the free-form ``verify_granular_result`` and ``usage_metadata`` as values,
    so it must run before the section is encoded.
    """
    if not template:
        return _NO_COMPUTED
    score = _score(template.get("verify_granular_result"))
    usage = template.get("usage_metadata")
    # dict, not Mapping: a dumped value is a dict, and the ABC check is slower.
    total = usage.get("total") if isinstance(usage, dict) else None
    if not isinstance(total, dict):
        return (score, *_NO_COMPUTED[1:])
    cost = total.get("cost_usd")
    return (
        score,
        *map(_count, map(total.get, _TOKEN_KINDS)),
        float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
        _count(total.get("cache_hits", 0)),
    )


def _fill_summary(row: dict[str, Any], dumped: Dumped, names: RowNames) -> None:
    """Set every :data:`SUMMARY_COLUMNS` value of ``row`` (a test checks the set)."""
    row["result_key"], row["answering_model"], row["parsing_model"] = names
    for section, name in COPIED_SUMMARY:
        body = dumped.get(section)
        row[name] = None if body is None else body.get(name)
    row.update(zip(COMPUTED_SUMMARY, computed_summary(dumped.get("template")), strict=True))


def _source_columns() -> tuple[Column, ...]:
    columns: list[Column] = []
    for name, info in VerificationResultMetadata.model_fields.items():
        codec = codec_for_annotation(name, info.annotation)
        if codec.kind == "struct":
            # Model identities (and any future fixed-shape metadata part) are flattened
            # one level so that "answering_model_name" is a plain, filterable column.
            columns.extend(
                Column(child.renamed(f"{name}_{child.name}"), ("metadata", name, child.name))
                for child in codec.children
            )
        else:
            columns.append(Column(codec, ("metadata", name)))
    for name, info in VerificationResult.model_fields.items():
        if name != "metadata" and name not in SECTION_NAMES:
            columns.append(Column(codec_for_annotation(name, info.annotation), (name,)))
    return tuple(columns)


def _template_summary_codecs() -> tuple[FieldCodec, ...]:
    """Codecs of the template fields copied to flat columns (those the model has)."""
    annotation = VerificationResult.model_fields["template"].annotation
    children = {
        child.name: child for child in codec_for_annotation("template", annotation).children
    }
    return tuple(
        children[name]
        for name in _TEMPLATE_SUMMARY
        if name in children and children[name].kind == "plain"
    )


_TEMPLATE_SUMMARY_CODECS = _template_summary_codecs()

NAME_COLUMNS: tuple[str, ...] = ("result_key", "answering_model", "parsing_model")
"""Summary columns holding a :data:`RowNames` triple, in its order."""

COPIED_SUMMARY: tuple[tuple[str, str], ...] = (
    *(("template", codec.name) for codec in _TEMPLATE_SUMMARY_CODECS),
    *_PERFORMED_FLAGS,
)
"""Summary columns copied from a section field of the same name: (section, field);
null when the section is absent."""

COMPUTED_SUMMARY: tuple[str, ...] = ("verify_granular_result", *_TOKEN_KINDS, *_COST_KINDS)
"""Summary columns computed by :func:`computed_summary`, in its order."""

_NO_COMPUTED: tuple[None, ...] = (None,) * len(COMPUTED_SUMMARY)


def _summary_columns() -> tuple[Column, ...]:
    codecs = [
        FieldCodec("result_key", pa.string(), "plain"),
        FieldCodec("answering_model", pa.string(), "plain"),
        FieldCodec("parsing_model", pa.string(), "plain"),
        *_TEMPLATE_SUMMARY_CODECS,
        FieldCodec("verify_granular_result", pa.float64(), "plain"),
        *(FieldCodec(flag, pa.bool_(), "plain") for _, flag in _PERFORMED_FLAGS),
        *(FieldCodec(kind, pa.int64(), "plain") for kind in _TOKEN_KINDS),
        FieldCodec("cost_usd", pa.float64(), "plain"),
        FieldCodec("cache_hits", pa.int64(), "plain"),
    ]
    return tuple(Column(codec) for codec in codecs)


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


LABEL_COLUMNS: tuple[Column, ...] = (
    Column(FieldCodec("label_correct", pa.bool_(), "plain")),
    Column(FieldCodec("label_note", pa.string(), "plain")),
)
"""A person's label of the result's answer (right or wrong, a note); ignored on read."""

SOURCE_COLUMNS: tuple[Column, ...] = _source_columns() + _section_columns()
"""Columns that together rebuild a result (flat scalars first, then sections)."""

SUMMARY_COLUMNS: tuple[Column, ...] = _summary_columns()
"""Derived columns for filtering and grouping; ignored on read."""

_FLAT_SOURCE = SOURCE_COLUMNS[: -len(SECTION_NAMES)]
_SECTIONS = SOURCE_COLUMNS[-len(SECTION_NAMES) :]
ALL_COLUMNS: tuple[Column, ...] = _check_unique(
    _FLAT_SOURCE + SUMMARY_COLUMNS + LABEL_COLUMNS + _SECTIONS
)

FLAT_COLUMNS: tuple[Column, ...] = ALL_COLUMNS[: -len(SECTION_NAMES)]
"""Every column except the section structs: the CSV columns."""

RESULT_ARROW_SCHEMA: pa.Schema = pa.schema(
    [column.codec.arrow_field() for column in ALL_COLUMNS],
    metadata={"verifleet.format": FORMAT_NAME, "verifleet.version": str(FORMAT_VERSION)},
)


def batch_of_rows(rows: list[dict[str, Any]]) -> pa.RecordBatch:
    """Rows (:func:`result_to_row`) as one batch of :data:`RESULT_ARROW_SCHEMA`,
    as ``RecordBatch.from_pylist`` builds it (a missing key is null) without its
    import of pandas (seconds of a run's finalize, for a check of its input).

    Raises:
        pyarrow.ArrowException, OverflowError: a value the schema cannot hold.
    """
    columns = {name: [row.get(name) for row in rows] for name in RESULT_ARROW_SCHEMA.names}
    return pa.RecordBatch.from_pydict(columns, schema=RESULT_ARROW_SCHEMA)


"""The explicit Arrow schema of a results Parquet file (one row per result)."""


# Metadata columns stored exactly as dumped, under their own name: the dumped metadata
# dict itself serves as the row for them, which saves a copy per column per row.
_AS_DUMPED = tuple(
    column
    for column in _FLAT_SOURCE
    if column.codec.kind == "plain" and column.path == ("metadata", column.name)
)
_AS_DUMPED_NAMES = frozenset(column.name for column in _AS_DUMPED)
_CONVERTED = tuple(column for column in _FLAT_SOURCE if column.name not in _AS_DUMPED_NAMES)


# (column name, parent path, field name, codec) for every source column not taken as
# dumped, precomputed because row_to_result runs once per row read.
_DECODE_PLAN = tuple(
    (column.name, column.path[:-1], column.path[-1], column.codec)
    for column in _CONVERTED + _SECTIONS
)


# (column name, path in the dumped result, codec or None when no conversion is needed)
_ENCODE_PLAN = tuple(
    (column.name, column.path, column.codec if column.codec.needs_conversion else None)
    for column in _CONVERTED
)
_SECTION_PLAN = tuple((column.name, column.codec) for column in _SECTIONS)


def result_to_row(
    result: VerificationResult, job_id: str | None = None, *, sections: bool = True
) -> dict[str, Any]:
    """The Arrow-ready row of ``result``, keyed by column name.

    The row may hold extra keys (the nested model identities); consumers pick the
    columns they need by name, as ``RecordBatch.from_pylist`` does with the schema.

    Args:
        result: The result to flatten.
        job_id: When given, fills ``result_key`` with the deterministic unit key.
        sections: False leaves out the section structs (the :data:`FLAT_COLUMNS`).

    Raises:
        ValueError: a free-form field holds a value JSON cannot represent.
    """
    meta = result.metadata
    names: RowNames = (
        None if job_id is None else result_key(result, job_id=job_id),
        meta.answering.display_string,
        meta.parsing.display_string,
    )
    return _dumped_to_row(result.model_dump(mode="json"), names, sections)


def fill_label(row: dict[str, Any], result: VerificationResult, labels: Labels | None) -> None:
    """Set ``row``'s label columns from ``labels`` (null when the answer has none)."""
    meta = result.metadata
    found = (
        labels.get((meta.question_id, meta.answering.canonical_key, meta.replicate))
        if labels
        else None
    )
    row["label_correct"], row["label_note"] = found if found is not None else (None, None)


def _dumped_to_row(dumped: Dumped, names: RowNames, sections: bool) -> dict[str, Any]:
    # Consumes ``dumped``: its metadata dict becomes the row, its sections are
    # rewritten in place.
    row: dict[str, Any] = dumped["metadata"]
    for name, path, codec in _ENCODE_PLAN:
        value: Any = dumped
        for step in path:
            value = value[step]
            if value is None:  # an absent optional part: every column below is null
                break
        row[name] = value if codec is None else codec.encode(value)
    _fill_summary(row, dumped, names)
    if sections:
        # Last on purpose: encoding rewrites the section's free-form fields in place
        # as JSON text, and the summary extractors above read them as values.
        for name, codec in _SECTION_PLAN:
            row[name] = codec.encode(dumped[name])
    return row


def row_to_result(row: Mapping[str, Any]) -> VerificationResult:
    """Rebuild a result from a row holding (a subset of) the source columns.

    A missing column leaves its field to the model default (files written before the
    field existed still read). Derived columns are ignored.

    Raises:
        ValueError: a JSON text column is corrupt, or (as
            ``pydantic.ValidationError``) the values do not form a valid result.
    """
    metadata = {name: row[name] for name in _AS_DUMPED_NAMES if name in row}
    data: dict[str, Any] = {"metadata": metadata}
    for name, parents, leaf, codec in _DECODE_PLAN:
        if name not in row:
            continue
        target = data
        for step in parents:
            target = target.setdefault(step, {})
        value = row[name]
        target[leaf] = codec.decode(value) if codec.needs_conversion else value
    return VerificationResult.model_validate(data)
