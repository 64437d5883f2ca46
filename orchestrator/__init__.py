"""verifleet.orchestrator — job submission, exports, the local runner, the reward
service and the CLI.

The names below are loaded on first use, not when the package is imported: a
process that needs one submodule (the CLI's ``worker`` command, a test of the
local runner) does not pay for pyarrow, the export layouts or the local-LLM
builder it never touches.
"""

from __future__ import annotations

import typing

from verifleet import _lazy

if typing.TYPE_CHECKING:
    from ._export import (
        RESULT_ARROW_SCHEMA,
        RESULT_FORMATS,
        ParquetResultWriter,
        ResultFormat,
        iter_parquet,
        iter_results,
        read_manifest,
        read_parquet_rows,
        read_results,
        read_scenario_results,
        resolve_format,
        write_results,
    )
    from ._fleet.drain import StoredResults
    from ._localllm import (
        LocalLLMError,
        LocalLLMServer,
        ensure_llama_server,
        find_llama_server,
        find_model_file,
        llama_server_cache_dir,
    )

# name -> the submodule that defines it
_LAZY: dict[str, str] = {
    # result export and import (Parquet, JSON, JSON Lines, CSV)
    "RESULT_ARROW_SCHEMA": "._export",
    "RESULT_FORMATS": "._export",
    "ParquetResultWriter": "._export",
    "ResultFormat": "._export",
    "iter_parquet": "._export",
    "iter_results": "._export",
    "read_manifest": "._export",
    "read_parquet_rows": "._export",
    "read_results": "._export",
    "read_scenario_results": "._export",
    "resolve_format": "._export",
    "write_results": "._export",
    # a fleet job's results, drained to shards (``--results-to``) and in Redis
    "StoredResults": "._fleet.drain",
    # the bundled local model (llama.cpp server + SmolLM2) for the quick start and tests
    "LocalLLMError": "._localllm",
    "LocalLLMServer": "._localllm",
    "ensure_llama_server": "._localllm",
    "find_llama_server": "._localllm",
    "find_model_file": "._localllm",
    "llama_server_cache_dir": "._localllm",
}

__all__ = [
    "RESULT_ARROW_SCHEMA",
    "RESULT_FORMATS",
    "LocalLLMError",
    "LocalLLMServer",
    "ParquetResultWriter",
    "ResultFormat",
    "StoredResults",
    "ensure_llama_server",
    "find_llama_server",
    "find_model_file",
    "iter_parquet",
    "iter_results",
    "llama_server_cache_dir",
    "read_manifest",
    "read_parquet_rows",
    "read_results",
    "read_scenario_results",
    "resolve_format",
    "write_results",
]


__getattr__, __dir__ = _lazy.exports(__name__, _LAZY)
