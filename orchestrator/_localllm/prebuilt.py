"""The prebuilt runtime: llama.cpp's server from the ``xllamacpp`` wheel on PyPI.

``xllamacpp`` ships llama.cpp, its HTTP server included, compiled into one Python
extension (a manylinux2014 x86-64 wheel, no compiler needed). The extension runs
the same server code as ``llama-server``: OpenAI-compatible ``/v1/chat/completions``
with ``json_schema`` response formats enforced by a grammar, ``/health``,
``/v1/models``, ``/metrics``. :mod:`.prebuilt_server` starts it in a process of its
own from the same command-line options as ``llama-server``, so
:class:`~.server.LocalLLMServer` runs either one the same way.

The pinned wheel is a portable build for x86-64-v3: it uses AVX2, FMA, F16C and
BMI2 and holds no AVX-512 or AMX code at all (checked by disassembling it: no
``zmm`` register and no tile instruction), so it cannot meet the AMX repack crash,
but it cannot run on an x86-64 CPU without AVX2 either. :func:`prebuilt_unavailable`
says why it cannot serve on this machine, and the caller falls back to the source
build (:mod:`.build`) in that case.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import sys
from pathlib import Path

from .build import cpu_flags

__all__ = [
    "PREBUILT_PACKAGE",
    "PREBUILT_VERSION",
    "PREBUILT_X86_FLAGS",
    "prebuilt_cache_dir",
    "prebuilt_command",
    "prebuilt_library",
    "prebuilt_unavailable",
]

#: The distribution that ships the prebuilt server (installed by scripts/install.sh).
PREBUILT_PACKAGE = "xllamacpp"
#: The pinned release: its options, CPU needs and structured output were checked.
PREBUILT_VERSION = "2026.10.11549"
#: The instruction sets the pinned x86-64 wheel is compiled for (its
#: ``get_system_info()`` reports AVX, AVX2, F16C, FMA, BMI2; its code uses them).
PREBUILT_X86_FLAGS = frozenset({"avx", "avx2", "fma", "f16c", "bmi2"})

_INSTALL = f"pip install {PREBUILT_PACKAGE}=={PREBUILT_VERSION}"
_MODULE = "verifleet.orchestrator._localllm.prebuilt_server"


def prebuilt_unavailable(flags: frozenset[str] | None = None) -> str | None:
    """Why the prebuilt runtime cannot serve on this machine; None when it can.

    Checked without importing the extension (an import on a CPU without AVX2 could
    already die of an illegal instruction): the platform, the CPU's flags, and the
    installed package and version. A runtime that passes may still fail its smoke
    check, which the caller runs.

    Args:
        flags: CPU flags as in ``/proc/cpuinfo``; default: this machine's.
    """
    if sys.platform != "linux" or platform.machine().lower() not in ("x86_64", "amd64"):
        return f"the wheel is for Linux x86-64, this is {sys.platform} {platform.machine()}"
    have = cpu_flags() if flags is None else flags
    missing = sorted(PREBUILT_X86_FLAGS - have)
    if missing:
        return f"the CPU lacks {', '.join(missing)}, which the wheel is compiled for"
    try:
        installed = importlib.metadata.version(PREBUILT_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return f"{PREBUILT_PACKAGE} is not installed ({_INSTALL})"
    if installed != PREBUILT_VERSION:
        return f"{PREBUILT_PACKAGE} {installed} is installed, verifleet needs {PREBUILT_VERSION} ({_INSTALL})"
    if prebuilt_library() is None:
        return f"{PREBUILT_PACKAGE} holds no compiled extension; reinstall it ({_INSTALL})"
    return None


def prebuilt_library() -> Path | None:
    """The installed compiled extension (``xllamacpp*.so``), found without importing it."""
    spec = importlib.util.find_spec(PREBUILT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("xllamacpp*.so"))
        if found:
            return found[0]
    return None


def prebuilt_command() -> tuple[str, ...]:
    """The command that starts the prebuilt server; ``llama-server`` options follow."""
    return (sys.executable, "-m", _MODULE)


def prebuilt_cache_dir() -> Path:
    """``$XDG_CACHE_HOME`` (or ``~/.cache``) ``/verifleet/prebuilt-xllamacpp-<version>``:
    the prebuilt runtime's smoke records, apart from the source build's cache."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "verifleet" / f"prebuilt-{PREBUILT_PACKAGE}-{PREBUILT_VERSION}"
