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
    read_parquet_rows,
    read_results,
    resolve_format,
    write_results,
)

# --- the bundled local model (llama-server + SmolLM2) for the quick start and tests -
from ._localllm import (
    LocalLLMError,
    LocalLLMServer,
    ensure_llama_server,
    find_llama_server,
    find_model_file,
    llama_server_cache_dir,
)

__all__: list[str] = [
    "RESULT_ARROW_SCHEMA",
    "RESULT_FORMATS",
    "LocalLLMError",
    "LocalLLMServer",
    "ParquetResultWriter",
    "ResultFormat",
    "ensure_llama_server",
    "find_llama_server",
    "find_model_file",
    "iter_parquet",
    "iter_results",
    "llama_server_cache_dir",
    "read_parquet_rows",
    "read_results",
    "resolve_format",
    "write_results",
]
