"""Result export and import: Parquet (primary), JSON, JSON Lines and CSV.

Private package; the public names are re-exported by :mod:`verifleet.orchestrator`.
"""

from .api import (
    RESULT_FORMATS,
    ResultFormat,
    iter_results,
    read_results,
    resolve_format,
    write_results,
)
from .layout import RESULT_ARROW_SCHEMA
from .manifest import (
    MANIFEST_METADATA_KEY,
    build_manifest,
    manifest_path,
    read_manifest,
    write_manifest_beside,
)
from .parquet import ParquetResultWriter, iter_parquet, write_stored_parquet
from .rows import read_parquet_rows
from .scenarios import SCENARIO_METADATA_KEY, read_scenario_results, scenario_errors

__all__ = [
    "MANIFEST_METADATA_KEY",
    "RESULT_ARROW_SCHEMA",
    "RESULT_FORMATS",
    "SCENARIO_METADATA_KEY",
    "ParquetResultWriter",
    "ResultFormat",
    "build_manifest",
    "iter_parquet",
    "iter_results",
    "manifest_path",
    "read_manifest",
    "read_parquet_rows",
    "read_results",
    "read_scenario_results",
    "resolve_format",
    "scenario_errors",
    "write_manifest_beside",
    "write_results",
    "write_stored_parquet",
]
