"""Result export and import: Parquet (primary), JSON, JSON Lines and CSV.

Private package; the public names are re-exported by :mod:`verifleet.orchestrator`.
"""

from __future__ import annotations

import importlib
import typing
from typing import Any

if typing.TYPE_CHECKING:
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

# name -> the submodule that defines it, loaded on first use: checking an
# output's format (before a run) needs neither pyarrow nor the store's keys
_LAZY: dict[str, str] = {
    "RESULT_FORMATS": ".formats",
    "ResultFormat": ".formats",
    "iter_results": ".api",
    "read_results": ".api",
    "resolve_format": ".formats",
    "write_results": ".api",
    "RESULT_ARROW_SCHEMA": ".layout",
    "MANIFEST_METADATA_KEY": ".manifest",
    "build_manifest": ".manifest",
    "manifest_path": ".manifest",
    "read_manifest": ".manifest",
    "write_manifest_beside": ".manifest",
    "ParquetResultWriter": ".parquet",
    "iter_parquet": ".parquet",
    "write_stored_parquet": ".parquet",
    "read_parquet_rows": ".rows",
    "SCENARIO_METADATA_KEY": ".scenarios",
    "read_scenario_results": ".scenarios",
    "scenario_errors": ".scenarios",
}

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
