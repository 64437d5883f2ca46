"""CSV export and import: one row per result, streamed.

The columns are the flat Parquet columns (ids, models, replicate, outcome, check
flags, tokens; see :mod:`.layout`; a free-form metadata field would be JSON text)
for people and spreadsheets, followed by
``result_json``, the complete result as compact JSON. A CSV cell cannot tell ``None``
from an empty string, so reading rebuilds each result from ``result_json`` alone and
the flat cells are never parsed back. Flat cells: ``None`` is empty, booleans are
``true``/``false``, lists are JSON arrays.

A CSV is opened in spreadsheets, where a cell starting with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return is run as a formula (``=HYPERLINK(...)``, DDE),
and question ids, texts and evaluation inputs come from benchmark authors. Every
text cell that starts so is written with a leading ``'`` (OWASP's "CSV
injection" advice), which spreadsheets show as text; numbers and booleans are
written as they are (``-3`` stays a number). ``result_json`` always starts with
``{`` and is untouched, so reading a file back gives the exact results.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterable, Iterator

from pydantic import ValidationError

from verifleet.schemas import VerificationResult

from .files import PathLike, atomic_output, export_error, require_readable
from .layout import FLAT_COLUMNS, Labels, fill_label, result_to_row

__all__ = ["CSV_COLUMNS", "FORMULA_LEADS", "iter_csv", "neutralise", "write_csv"]

_FLAT_NAMES: tuple[str, ...] = tuple(column.name for column in FLAT_COLUMNS)
RESULT_JSON_COLUMN = "result_json"
CSV_COLUMNS: tuple[str, ...] = (*_FLAT_NAMES, RESULT_JSON_COLUMN)
"""Header of a results CSV file, in order."""


#: What makes a spreadsheet read a cell as a formula.
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(text: str) -> str:
    """``text`` with a ``'`` in front when a spreadsheet would run it as a formula
    (it starts with one of :data:`FORMULA_LEADS`), else unchanged."""
    return "'" + text if text.startswith(FORMULA_LEADS) else text


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)  # a number, negative ones too, stays a number
    if isinstance(value, list):
        return neutralise(json.dumps(value, ensure_ascii=False))
    return neutralise(str(value))


def write_csv(
    results: Iterable[VerificationResult],
    path: PathLike,
    *,
    job_id: str | None = None,
    labels: Labels | None = None,
) -> int:
    """Write ``results`` as CSV, one row at a time (atomic on success).

    Args:
        results: The results, consumed lazily.
        path: Destination; an existing file is replaced on success only.
        job_id: When given, fills the ``result_key`` column.
        labels: Human labels by answer, for the ``label_*`` columns.

    Returns:
        The number of results written.

    Raises:
        ExportError: the file cannot be written, or a result holds a value JSON
            cannot represent.
    """
    count = 0
    try:
        with (
            atomic_output(path) as temp,
            temp.open("w", encoding="utf-8", newline="") as out,
        ):
            writer = csv.writer(out)
            writer.writerow(CSV_COLUMNS)
            for result in results:
                row = result_to_row(result, job_id, sections=False)
                fill_label(row, result, labels)
                cells = [_cell(row[name]) for name in _FLAT_NAMES]
                writer.writerow([*cells, result.model_dump_json()])
                count += 1
    except (OSError, ValueError) as exc:
        raise export_error(path, f"cannot write: {exc}") from exc
    return count


def _allow_long_fields() -> None:
    # The csv module refuses fields over 128 KiB by default, and a result with a long
    # agent trace exceeds that. The limit is process-wide, so only ever raise it.
    target = min(sys.maxsize, 2**31 - 1)
    if csv.field_size_limit() < target:
        csv.field_size_limit(target)


def iter_csv(path: PathLike) -> Iterator[VerificationResult]:
    """Stream the results of a CSV file written by :func:`write_csv`.

    Raises:
        ExportError: at once if the file is missing or unreadable; during iteration
            if it has no ``result_json`` column or a row does not hold a valid result
            (the message gives the row number, 1 being the first after the header).
    """
    require_readable(path)
    _allow_long_fields()
    return _rows(path)


def _rows(path: PathLike) -> Iterator[VerificationResult]:
    with open(path, encoding="utf-8", newline="") as handle:
        try:
            reader = csv.DictReader(handle)
            if RESULT_JSON_COLUMN not in (reader.fieldnames or ()):
                raise export_error(path, f"no {RESULT_JSON_COLUMN!r} column: not a results CSV")
            for number, row in enumerate(reader, start=1):
                text = row.get(RESULT_JSON_COLUMN)
                if not text:
                    raise export_error(path, f"row {number}: empty {RESULT_JSON_COLUMN!r}")
                try:
                    yield VerificationResult.model_validate_json(text)
                except ValidationError as exc:
                    problem = f"row {number} is not a valid result: {exc}"
                    raise export_error(path, problem) from exc
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise export_error(path, f"cannot read: {exc}") from exc
