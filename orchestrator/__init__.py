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


# Each name of __all__ loads on first use, from the module the TYPE_CHECKING block
# imports it from.
__getattr__, __dir__ = _lazy.exports(__name__)
