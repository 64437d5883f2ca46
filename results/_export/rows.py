"""Random access to a results Parquet file: a few rows by position, not the file."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from itertools import accumulate

import pyarrow as pa

from verifleet.schemas import VerificationResult

from .files import PathLike, export_error
from .layout import SOURCE_COLUMNS, row_to_result
from .parquet import _open

__all__ = ["read_parquet_rows"]


def read_parquet_rows(path: PathLike, rows: Sequence[int]) -> list[VerificationResult]:
    """The results at positions ``rows`` (0-based, file order) of a Parquet file.

    Only the row groups holding those rows are read (one row group is one write
    batch, 1,000 rows by default), so a viewer can open one result of a file of
    100,000 in milliseconds.

    Returns:
        The results in the order of ``rows`` (a position may repeat).

    Raises:
        ExportError: the file is missing, not a results file, a position is outside
            the file, or the row is not a valid result.
    """
    parquet = _open(path)
    with parquet:
        meta = parquet.metadata
        sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        ends = list(accumulate(sizes))
        total = ends[-1] if ends else 0
        present = set(parquet.schema_arrow.names)
        columns = [column.name for column in SOURCE_COLUMNS if column.name in present]
        groups: dict[int, list[dict[str, object]]] = {}
        # Decoding rewrites a row's nested values in place, so each row is decoded
        # once; a repeated position gets a copy of the same result.
        decoded: dict[int, VerificationResult] = {}
        out = []
        for position in rows:
            if position in decoded:
                out.append(decoded[position].model_copy(deep=True))
                continue
            if not 0 <= position < total:
                raise export_error(path, f"no row {position}: the file has {total} rows")
            group = bisect.bisect_right(ends, position)
            if group not in groups:
                try:
                    table = parquet.read_row_group(group, columns=columns, use_threads=False)
                except (OSError, pa.ArrowException) as exc:
                    raise export_error(path, f"cannot read row {position}: {exc}") from exc
                groups[group] = table.to_pylist()
            start = ends[group] - sizes[group]
            try:
                decoded[position] = row_to_result(groups[group][position - start])
            except ValueError as exc:
                raise export_error(path, f"row {position} is not a valid result: {exc}") from exc
            out.append(decoded[position])
        return out
