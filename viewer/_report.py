"""The static report: one self-contained HTML file with the overview and the table."""

from __future__ import annotations

import base64
import gzip
import json
import os
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from ._app import page_html
from ._detail import result_detail
from ._index import TABLE_COLUMNS
from ._matrix import MATRIX_BY, matrix
from ._overview import overview
from ._runs import Run
from ._scenarios import scenario_page

__all__ = ["report_html", "write_report"]


def report_html(runs: Sequence[Run], *, title: str = "") -> str:
    """The report page of ``runs``: every run's overview, filter values and summary
    table rows embedded as JSON, the viewer's script and stylesheet inlined.

    The page needs no server and fetches nothing: the table is filtered and paged in
    the browser (fine for tens of thousands of rows; full results are not embedded),
    and the question x model matrix of all runs is embedded whole.
    """
    boot: dict[str, object] = {
        "mode": "static",
        "title": title,
        "runs": [
            {
                "name": run.name,
                "count": len(run.index),
                "details": _details(run),
                "info": {
                    **run.info(),
                    "report_written": datetime.now(UTC).isoformat(timespec="seconds"),
                },
                "overview": run.index.memo("overview", overview),
                "facets": run.index.facets(),
                "scenarios": scenario_page(run.scenarios()),
                "table": {
                    "columns": [*TABLE_COLUMNS, "keywords", "completed"],
                    "rows": run.index.table(),
                },
            }
            for run in runs
        ],
        # The question x model matrix of every run together, each way of grouping.
        "matrix": {
            by: matrix([(run.name, run.index) for run in runs], by=by, limit=100_000)
            for by in MATRIX_BY
        },
    }
    return page_html(boot, inline=True)


def _details(run: Run) -> str:
    """Every result's page data (:func:`result_detail`), as gzip-compressed JSON in
    base64: a result page in the report opens offline, and 10,000 results add a few
    MB instead of tens (the page inflates them with the browser's
    ``DecompressionStream`` on the first result it shows)."""
    pages = [
        result_detail(run.name, row, result, run.templates.lookup(result.metadata.template_id))
        for row, result in enumerate(run.iter_full())
    ]
    raw = json.dumps(pages, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=6)).decode("ascii")


def write_report(runs: Sequence[Run], out: Path, *, title: str = "") -> int:
    """Write the report of ``runs`` to ``out``; the file appears only when complete.

    Returns:
        The size of the file in bytes.

    Raises:
        OSError: ``out`` cannot be written (its folder is missing or read-only).
    """
    text = report_html(runs, title=title).encode("utf-8")
    out = Path(out)
    fd, temp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent or Path("."))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text)
        os.replace(temp, out)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return len(text)
