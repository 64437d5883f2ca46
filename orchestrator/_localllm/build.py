"""Building llama.cpp's ``llama-server`` once, into the user's cache directory.

The sources are the llama.cpp tree vendored in the pinned ``llama-cpp-python``
source distribution from PyPI, so the only network access is that one download
(none at all with ``VERIFLEET_LLAMA_CPP_SDIST`` pointing at a local copy). Only the
``llama-server`` target is built, with every option that would fetch something at
configure or build time switched off. The binary is statically linked against
llama.cpp and cached under ``$XDG_CACHE_HOME`` (or ``~/.cache``)
``/verifleet/llama-server-<version>-<options hash>/bin/``; later calls reuse it.

The build is portable, never ``-march=native``: ggml's native build compiles every
instruction set the build machine has, including the AMX path, which crashes on
Intel CPUs with AMX when it repacks the bundled Q4_1 model. The options name an
explicit feature set instead (:func:`build_options`): AVX2/FMA/F16C/BMI2 where the
CPU has them, SSE4.2 or nothing otherwise, never AVX-512 or AMX. Their hash is part
of the cache directory's name, so a binary built with other options (an old native
build, or a build on a CPU of another tier) is rebuilt, not reused. A file lock keeps
two processes (two test sessions, two CLI runs) from building at once: the second
waits and then finds the first one's binary.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, TextIO

from .errors import LocalLLMError

__all__ = [
    "CMAKE_OPTIONS",
    "LLAMA_CPP_PYTHON_VERSION",
    "LLAMA_SERVER_ENV",
    "SDIST_ENV",
    "build_options",
    "ensure_llama_server",
    "find_llama_server",
    "llama_server_cache_dir",
]

#: The pinned source distribution whose vendored llama.cpp is built.
LLAMA_CPP_PYTHON_VERSION = "0.3.36"
#: Path of an existing ``llama-server`` binary to use instead of building one.
LLAMA_SERVER_ENV = "VERIFLEET_LLAMA_SERVER"
#: Path of a local ``llama_cpp_python-<version>.tar.gz``, for offline builds.
SDIST_ENV = "VERIFLEET_LLAMA_CPP_SDIST"

#: CMake options of the build, each for a reason.
CMAKE_OPTIONS: tuple[str, ...] = (
    "-DCMAKE_BUILD_TYPE=Release",
    # One self-contained binary in the cache, no libllama.so to keep next to it.
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_SERVER=ON",
    # The server only serves local files: no HTTPS client, no model downloads.
    "-DLLAMA_OPENSSL=OFF",
    # The web UI would come from npm or a Hugging Face bucket at build time.
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    # LLGuidance is an ExternalProject cloned from git; llama.cpp's own grammar
    # engine already implements json_schema structured output.
    "-DLLAMA_LLGUIDANCE=OFF",
    # Portable code: the instruction sets come from build_options(), never from
    # -march=native (which brings in AMX and AVX-512 paths; see the module doc).
    "-DGGML_NATIVE=OFF",
    "-DGGML_AVX512=OFF",
    "-DGGML_AVX512_VBMI=OFF",
    "-DGGML_AVX512_VNNI=OFF",
    "-DGGML_AVX512_BF16=OFF",
    "-DGGML_AMX_TILE=OFF",
    "-DGGML_AMX_INT8=OFF",
    "-DGGML_AMX_BF16=OFF",
)


def _isa(**enabled: bool) -> tuple[str, ...]:
    names = ("sse42", "avx", "avx2", "fma", "f16c", "bmi2")
    return tuple(f"-DGGML_{n.upper()}={'ON' if enabled.get(n) else 'OFF'}" for n in names)


# x86-64 feature tiers, best first: (cpuinfo flags required, ggml options). The
# first is x86-64-v3 (every x86 CPU since Haswell / Zen 1); the last runs anywhere.
_X86_TIERS: tuple[tuple[frozenset[str], tuple[str, ...]], ...] = (
    (
        frozenset({"sse4_2", "avx", "avx2", "fma", "f16c", "bmi2"}),
        _isa(sse42=True, avx=True, avx2=True, fma=True, f16c=True, bmi2=True),
    ),
    (
        frozenset({"sse4_2"}),
        _isa(sse42=True),
    ),
    (
        frozenset(),
        _isa(),
    ),
)

_BINARY = "llama-server"
_PERCENT = re.compile(r"^\[\s*(\d+)%\]")


def cpu_flags() -> frozenset[str]:
    """The instruction-set flags of this machine's first CPU (empty off Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def build_options(flags: frozenset[str] | None = None) -> tuple[str, ...]:
    """The CMake options for this machine: :data:`CMAKE_OPTIONS` plus, on x86-64,
    the best portable feature tier the CPU supports (never AVX-512 or AMX).

    Args:
        flags: CPU flags as in ``/proc/cpuinfo``; default: this machine's.
    """
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return CMAKE_OPTIONS
    have = cpu_flags() if flags is None else flags
    tier = next(options for needed, options in _X86_TIERS if needed <= have)
    return CMAKE_OPTIONS + tier


def _options_key(options: tuple[str, ...]) -> str:
    return hashlib.sha256("\n".join(options).encode()).hexdigest()[:10]


def llama_server_cache_dir() -> Path:
    """``$XDG_CACHE_HOME`` (or ``~/.cache``)
    ``/verifleet/llama-server-<version>-<hash of the build options>``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    name = f"llama-server-{LLAMA_CPP_PYTHON_VERSION}-{_options_key(build_options())}"
    return Path(base) / "verifleet" / name


def find_llama_server() -> Path | None:
    """The ``llama-server`` to use without building: ``$VERIFLEET_LLAMA_SERVER``, else
    the cached build; None when neither exists.

    Raises:
        LocalLLMError: ``$VERIFLEET_LLAMA_SERVER`` is set but not an executable file.
    """
    override = os.environ.get(LLAMA_SERVER_ENV)
    if override:
        path = Path(override).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise LocalLLMError(f"${LLAMA_SERVER_ENV}={override} is not an executable file")
        return path
    cached = llama_server_cache_dir() / "bin" / _BINARY
    return cached if cached.is_file() and os.access(cached, os.X_OK) else None


def ensure_llama_server(*, jobs: int | None = None, progress: TextIO | None = None) -> Path:
    """Return a usable ``llama-server``, building and caching it first if needed.

    A build takes about 10–12 minutes on two cores; progress goes to ``progress``
    (default: stderr), the compiler output to ``build.log`` in the cache directory.

    Args:
        jobs: Parallel compile jobs (default: the CPUs this process may use).
        progress: Where to write progress messages.

    Returns:
        The path of the executable.

    Raises:
        LocalLLMError: cmake, make/ninja or a C/C++ compiler is missing, the source
            download failed, or the build failed (the message names the log).
    """
    found = find_llama_server()
    if found is not None:
        return found
    out = progress if progress is not None else sys.stderr
    generator = _check_toolchain()
    cache = llama_server_cache_dir()
    with _exclusive(cache / ".build.lock", out):
        # Another process may have finished the build while we waited for the lock.
        found = find_llama_server()
        if found is not None:
            return found
        return _build(cache, generator, jobs or len(os.sched_getaffinity(0)), out)


def _say(out: TextIO, message: str) -> None:
    print(f"verifleet: {message}", file=out, flush=True)


def _check_toolchain() -> list[str]:
    """The CMake generator arguments to use; raises when a tool is missing."""
    missing: list[str] = []
    if shutil.which("cmake") is None:
        missing.append("cmake (3.14 or newer)")
    if not any(shutil.which(c) for c in (os.environ.get("CXX", ""), "c++", "g++", "clang++") if c):
        missing.append("a C++17 compiler (g++ or clang++)")
    if not any(shutil.which(c) for c in (os.environ.get("CC", ""), "cc", "gcc", "clang") if c):
        missing.append("a C compiler (gcc or clang)")
    generator: list[str] = []
    if shutil.which("make") is None:
        if shutil.which("ninja") is None:
            missing.append("make or ninja")
        else:
            generator = ["-G", "Ninja"]
    if missing:
        raise LocalLLMError(
            "cannot build llama-server: missing "
            + ", ".join(missing)
            + " (Debian/Ubuntu: apt-get install cmake build-essential; or set "
            + f"${LLAMA_SERVER_ENV} to an existing llama-server binary)"
        )
    return generator


@contextlib.contextmanager
def _exclusive(lock_path: Path, out: TextIO) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_path`` (released if the holder dies)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _say(out, "another process is building llama-server; waiting for it to finish")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build(cache: Path, generator: list[str], jobs: int, out: TextIO) -> Path:
    started = time.monotonic()
    work = cache / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log_path = cache / "build.log"
    options = build_options()
    _say(out, f"building llama-server (llama-cpp-python {LLAMA_CPP_PYTHON_VERSION} sources)")
    _say(out, f"this takes about 10-12 minutes on 2 cores, once; log: {log_path}")
    with log_path.open("w", encoding="utf-8") as log:
        sdist = _source_distribution(work / "dist", log, log_path, out)
        source = _extract_llama_cpp(sdist, work / "src")
        build_dir = work / "build"
        _say(out, "configuring (cmake)")
        _run(
            ["cmake", "-S", str(source), "-B", str(build_dir), *generator, *options],
            log,
            log_path,
            out,
        )
        _say(out, f"compiling with {jobs} job(s)")
        _run(
            ["cmake", "--build", str(build_dir), "--target", _BINARY, "-j", str(jobs)],
            log,
            log_path,
            out,
        )
    built = build_dir / "bin" / _BINARY
    if not built.is_file():
        raise LocalLLMError(f"the build finished but produced no {built}", log_path=str(log_path))
    target = cache / "bin" / _BINARY
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    shutil.copy2(built, partial)
    os.replace(partial, target)  # atomic: a concurrent finder never sees half a file
    seconds = round(time.monotonic() - started)
    info = {"version": LLAMA_CPP_PYTHON_VERSION, "cmake_options": options, "seconds": seconds}
    (cache / "bin" / "BUILD_INFO.json").write_text(json.dumps(info, indent=2), encoding="utf-8")
    shutil.rmtree(work, ignore_errors=True)
    _say(out, f"built {target} in {seconds // 60} min {seconds % 60} s")
    return target


def _source_distribution(dest: Path, log: IO[str], log_path: Path, out: TextIO) -> Path:
    local = os.environ.get(SDIST_ENV)
    if local:
        path = Path(local).expanduser()
        if not path.is_file():
            raise LocalLLMError(f"${SDIST_ENV}={local} is not a file")
        return path
    _say(out, f"downloading llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION} sources from PyPI")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
    command += [f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}", "-d", str(dest), "-q"]
    _run(command, log, log_path, out)
    found = sorted(dest.glob("llama_cpp_python-*.tar.gz"))
    if not found:
        raise LocalLLMError("pip downloaded no llama-cpp-python sdist", log_path=str(log_path))
    return found[0]


def _extract_llama_cpp(sdist: Path, dest: Path) -> Path:
    """Extract only the vendored llama.cpp tree; return its root.

    Matches ``<top>/vendor/llama.cpp/...`` exactly: the sdist also carries a git
    module directory ``<top>/.git/modules/vendor/llama.cpp`` without the sources.
    """
    try:
        with tarfile.open(sdist, "r:gz") as archive:
            members = [m for m in archive.getmembers() if _in_vendored_tree(m.name)]
            if not members:
                raise LocalLLMError(f"{sdist} holds no vendor/llama.cpp tree")
            archive.extractall(dest, members=members, filter="data")
            top = members[0].name.split("/", 1)[0]
    except (tarfile.TarError, OSError) as exc:
        raise LocalLLMError(f"cannot extract {sdist}: {exc}") from exc
    return dest / top / "vendor" / "llama.cpp"


def _in_vendored_tree(name: str) -> bool:
    parts = name.split("/")
    return len(parts) > 3 and parts[1:3] == ["vendor", "llama.cpp"]


def _run(command: Sequence[str], log: IO[str], log_path: Path, out: TextIO) -> None:
    """Run ``command`` with its output in the log; echo build progress every 10%."""
    log.write(f"$ {' '.join(command)}\n")
    log.flush()
    tail: list[str] = []
    shown = -10
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    ) as proc:
        assert proc.stdout is not None  # set by stdout=PIPE
        for line in proc.stdout:
            log.write(line)
            tail = [*tail[-19:], line.rstrip()]
            match = _PERCENT.match(line)
            if match and int(match.group(1)) >= shown + 10:
                shown = int(match.group(1)) // 10 * 10
                _say(out, f"  {shown}% compiled")
    log.flush()
    if proc.returncode != 0:
        detail = "\n".join(tail[-12:])
        raise LocalLLMError(
            f"'{command[0]} {command[1] if len(command) > 1 else ''}' failed "
            f"(exit {proc.returncode}):\n{detail}",
            log_path=str(log_path),
        )
