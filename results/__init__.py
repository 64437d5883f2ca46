"""verifleet.results — results at rest: exports, stored results, shards, statistics.

One layer below the viewer and the CLI (docs/architecture.md): the Parquet, JSON,
JSON Lines and CSV exports and their one row layout (``_export/``), the run
manifest, a fleet job's results drained from Redis into shards and read back
(:class:`StoredResults`, the drainer that ``verifleet worker`` starts), and the
statistics every report shares (:mod:`verifleet.results.stats`). It imports only
``store``, ``schemas`` and the errors, so the viewer, the CLI and a worker's
drainer read and write results without orchestrator code.

The names below are loaded on first use, not when the package is imported:
checking an output's format before a run needs neither pyarrow nor the store.
"""

from __future__ import annotations

import typing

from verifleet import _lazy

if typing.TYPE_CHECKING:
    from ._drain import ResultDrain, StoredResults, start_drainer
    from ._export.api import iter_results, read_results, write_results
    from ._export.formats import RESULT_FORMATS, ResultFormat, resolve_format
    from ._export.layout import RESULT_ARROW_SCHEMA
    from ._export.manifest import (
        MANIFEST_METADATA_KEY,
        build_manifest,
        manifest_path,
        read_manifest,
        write_manifest_beside,
    )
    from ._export.parquet import ParquetResultWriter, iter_parquet, write_stored_parquet
    from ._export.rows import read_parquet_rows
    from ._export.scenarios import SCENARIO_METADATA_KEY, read_scenario_results, scenario_errors
    from ._roots import ResultsRoots, location_problem
    from ._shards import read_shard, shard_keys, write_shard

__all__ = [
    "MANIFEST_METADATA_KEY",
    "RESULT_ARROW_SCHEMA",
    "RESULT_FORMATS",
    "SCENARIO_METADATA_KEY",
    "ParquetResultWriter",
    "ResultDrain",
    "ResultFormat",
    "ResultsRoots",
    "StoredResults",
    "build_manifest",
    "iter_parquet",
    "iter_results",
    "location_problem",
    "manifest_path",
    "read_manifest",
    "read_parquet_rows",
    "read_results",
    "read_scenario_results",
    "read_shard",
    "resolve_format",
    "scenario_errors",
    "shard_keys",
    "start_drainer",
    "write_manifest_beside",
    "write_results",
    "write_shard",
    "write_stored_parquet",
]


# Each name of __all__ loads on first use, from the module the TYPE_CHECKING block
# imports it from.
__getattr__, __dir__ = _lazy.exports(__name__)
