"""The static report: one self-contained HTML file with the overview and the table."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._app import page_html
from ._index import TABLE_COLUMNS
from ._overview import overview
from ._runs import Run

__all__ = ["report_html", "write_report"]


def report_html(runs: Sequence[Run], *, title: str = "") -> str:
    """The report page of ``runs``: every run's overview, filter values and summary
    table rows embedded as JSON, the viewer's script and stylesheet inlined.

    The page needs no server and fetches nothing: the table is filtered and paged in
    the browser (fine for tens of thousands of rows; full results are not embedded).
    """
    boot: dict[str, Any] = {
        "mode": "static",
        "title": title,
        "runs": [
            {
                "name": run.name,
                "count": len(run.index),
                "overview": run.index.memo("overview", overview),
                "facets": run.index.facets(),
                "table": {
                    "columns": [*TABLE_COLUMNS, "keywords", "completed"],
                    "rows": run.index.table(),
                },
            }
            for run in runs
        ],
    }
    return page_html(boot, inline=True)


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
