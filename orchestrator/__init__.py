"""verifleet.orchestrator — job submission, the result store, exports, the local
runner and the CLI."""

# --- result export and import (Parquet, JSON, JSON Lines, CSV) ------------------
from ._export import (
    RESULT_ARROW_SCHEMA,
    RESULT_FORMATS,
    ParquetResultWriter,
    ResultFormat,
    iter_parquet,
    iter_results,
    read_results,
    resolve_format,
    write_results,
)

__all__: list[str] = [
    "RESULT_ARROW_SCHEMA",
    "RESULT_FORMATS",
    "ParquetResultWriter",
    "ResultFormat",
    "iter_parquet",
    "iter_results",
    "read_results",
    "resolve_format",
    "write_results",
]
