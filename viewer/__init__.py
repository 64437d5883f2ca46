"""verifleet.viewer — see results in the browser: a local web viewer over result
files or a running fleet job, and a self-contained HTML report.

The server keeps a compact summary of every result in memory (:class:`ResultIndex`)
and reads a full result from its source (the Parquet file, Redis) only when a page
shows it, so files of 100,000 results stay responsive.
"""

from ._app import create_app, page_html
from ._detail import COMPARE_KEY, compare, result_detail
from ._errors import ViewerError
from ._index import TABLE_COLUMNS, ResultIndex, TableQuery
from ._overview import overview, template_summary, wilson_interval
from ._report import report_html, write_report
from ._runs import FileRun, JobRun, Run
from ._templates import TemplateSources, template_sources
from ._serve import DEFAULT_HOST, DEFAULT_PORT, bind_socket, check_binding, serve

__all__ = [
    "COMPARE_KEY",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "TABLE_COLUMNS",
    "FileRun",
    "JobRun",
    "ResultIndex",
    "Run",
    "TableQuery",
    "TemplateSources",
    "ViewerError",
    "bind_socket",
    "check_binding",
    "compare",
    "create_app",
    "overview",
    "page_html",
    "report_html",
    "result_detail",
    "serve",
    "template_sources",
    "template_summary",
    "wilson_interval",
    "write_report",
]
