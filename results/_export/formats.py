"""Result formats and how a path names one.

Kept apart from the readers and writers (pyarrow, the store's keys): the CLI
checks an output's format before a run starts, long before it writes one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, cast, get_args

from .files import PathLike, export_error

__all__ = ["RESULT_FORMATS", "ResultFormat", "resolve_format"]

ResultFormat = Literal["parquet", "json", "jsonl", "csv"]
RESULT_FORMATS: tuple[str, ...] = get_args(ResultFormat)
"""The format names :func:`write_results` and :func:`iter_results` accept."""

_BY_EXTENSION: dict[str, ResultFormat] = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
}


def resolve_format(path: PathLike, format: str | None = None) -> ResultFormat:
    """The format to use for ``path``: ``format`` if given, else from the extension.

    Extensions: ``.parquet``/``.pq``, ``.json``, ``.jsonl``/``.ndjson``, ``.csv``
    (case-insensitive).

    Raises:
        ExportError: ``format`` is not one of :data:`RESULT_FORMATS`, or it is None
            and the extension is unknown (the message names the extension).
    """
    if format is not None:
        if format not in RESULT_FORMATS:
            raise export_error(
                path, f"unknown result format {format!r}; use one of {', '.join(RESULT_FORMATS)}"
            )
        return cast(ResultFormat, format)
    suffix = Path(path).suffix.lower()
    if suffix not in _BY_EXTENSION:
        known = ", ".join(_BY_EXTENSION)
        shown = repr(suffix) if suffix else "no extension"
        raise export_error(path, f"cannot tell the result format from {shown}; use one of {known}")
    return _BY_EXTENSION[suffix]
