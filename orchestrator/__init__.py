"""verifleet.orchestrator — job submission, the local runner, the reward service
and the CLI (result exports live in :mod:`verifleet.results`; their names stay
re-exported here).

The names below are loaded on first use, not when the package is imported: a
process that needs one submodule (the CLI's ``worker`` command, a test of the
local runner) does not pay for pyarrow, the export layouts or the local-LLM
builder it never touches.
"""

from __future__ import annotations

import typing

from verifleet import _lazy

if typing.TYPE_CHECKING:
    from verifleet.results import (
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
        StoredResults,
        resolve_format,
        write_results,
    )
    from ._fleet.job import Job
    from ._local.driver import LocalDriver
    from ._local.lock import OutputLock, check_output
    from ._local.output import RunOutput
    from ._local.runner import LocalRunner
    from ._localllm import (
        LocalLLMError,
        LocalLLMServer,
        ensure_llama_server,
        find_llama_server,
        find_model_file,
        llama_server_cache_dir,
    )
    from ._preflight import preflight_models
    from ._selection import parse_question_patterns, select_benchmark

# name -> the submodule that defines it
_LAZY: dict[str, str] = {
    # result export and import (Parquet, JSON, JSON Lines, CSV), kept here for
    # code written before they moved to verifleet.results
    "RESULT_ARROW_SCHEMA": "verifleet.results",
    "RESULT_FORMATS": "verifleet.results",
    "ParquetResultWriter": "verifleet.results",
    "ResultFormat": "verifleet.results",
    "iter_parquet": "verifleet.results",
    "iter_results": "verifleet.results",
    "read_manifest": "verifleet.results",
    "read_parquet_rows": "verifleet.results",
    "read_results": "verifleet.results",
    "read_scenario_results": "verifleet.results",
    "resolve_format": "verifleet.results",
    "write_results": "verifleet.results",
    # a fleet job's results, drained to shards (``--results-to``) and in Redis
    "StoredResults": "verifleet.results",
    # what verifleet.run and verifleet.submit drive (verifleet/_api.py): a job, the
    # local runner, its output file and lock, the preflight and question selection
    "Job": "._fleet.job",
    "LocalDriver": "._local.driver",
    "LocalRunner": "._local.runner",
    "OutputLock": "._local.lock",
    "RunOutput": "._local.output",
    "check_output": "._local.lock",
    "parse_question_patterns": "._selection",
    "preflight_models": "._preflight",
    "select_benchmark": "._selection",
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
    "Job",
    "LocalDriver",
    "LocalLLMError",
    "LocalLLMServer",
    "LocalRunner",
    "OutputLock",
    "ParquetResultWriter",
    "ResultFormat",
    "RunOutput",
    "StoredResults",
    "check_output",
    "ensure_llama_server",
    "find_llama_server",
    "find_model_file",
    "iter_parquet",
    "iter_results",
    "llama_server_cache_dir",
    "parse_question_patterns",
    "preflight_models",
    "read_manifest",
    "read_parquet_rows",
    "read_results",
    "read_scenario_results",
    "resolve_format",
    "select_benchmark",
    "write_results",
]


__getattr__, __dir__ = _lazy.exports(__name__, _LAZY)
