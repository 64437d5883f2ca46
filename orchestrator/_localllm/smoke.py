"""A smoke check of a llama.cpp server on this machine, remembered per machine.

A binary that builds may still crash on the CPU it meets: llama.cpp repacks weights
at load time into layouts for the instruction sets it finds, and some of those paths
have crashed on CPUs they were not tested on (the AMX path on Intel Xeons). Before a
runtime (the prebuilt server or a ``llama-server`` binary, see :mod:`.runtime`) is
used for the first time on a machine, :func:`runtime_args` starts it, asks for one
short completion, and on failure tries once more with the safe runtime options
(``--no-repack``). What worked is written to the runtime's cache directory and
reused; nothing is retried on every start. A failure is not recorded: the next
process checks again (in memory, one process checks once).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from .build import cpu_flags
from .errors import LocalLLMError

if TYPE_CHECKING:
    from .runtime import LLMRuntime

__all__ = ["SAFE_RUNTIME_ARGS", "runtime_args"]

#: Runtime options that avoid llama.cpp's load-time weight repacking.
SAFE_RUNTIME_ARGS: tuple[str, ...] = ("--no-repack",)

_ATTEMPTS: tuple[tuple[str, ...], ...] = ((), SAFE_RUNTIME_ARGS)
_LOCK = threading.Lock()
_CHECKED: dict[str, tuple[str, ...] | LocalLLMError] = {}


def _fingerprint(runtime: LLMRuntime) -> str:
    """The runtime's files (path, size, mtime each) and the CPU it runs on."""
    parts: list[str] = []
    for path in runtime.identity:
        stat = path.stat()
        parts += [str(path.resolve()), str(stat.st_size), str(stat.st_mtime_ns)]
    parts += [platform.machine(), " ".join(sorted(cpu_flags()))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def runtime_args(runtime: LLMRuntime | Path, *, model_path: Path | None = None) -> tuple[str, ...]:
    """The extra ``llama-server`` options under which ``runtime`` works on this machine.

    The first call for a runtime on a machine runs the smoke check (a few seconds)
    and records the outcome in the runtime's cache directory; later calls read it.

    Args:
        runtime: The runtime, or a ``llama-server`` executable.
        model_path: GGUF file to check with; default: the bundled model.

    Returns:
        ``()`` when the binary works as it is, :data:`SAFE_RUNTIME_ARGS` when it
        works only with those.

    Raises:
        LocalLLMError: the runtime failed with and without the safe options; the
            message lists each attempt and the log kept for it.
    """
    if isinstance(runtime, Path):
        from .runtime import binary_runtime

        runtime = binary_runtime(runtime)
    key = _fingerprint(runtime)
    with _LOCK:
        known = _CHECKED.get(key)
        if isinstance(known, LocalLLMError):
            raise known
        if known is not None:
            return known
        record = runtime.cache_dir / "smoke" / f"{key}.json"
        try:
            args = tuple(json.loads(record.read_text(encoding="utf-8"))["args"])
        except (OSError, ValueError, KeyError, TypeError):
            try:
                args = _check(runtime, model_path, record.parent / key)
            except LocalLLMError as exc:
                _CHECKED[key] = exc
                raise
            record.parent.mkdir(parents=True, exist_ok=True)
            payload = {"runtime": runtime.label, "args": list(args)}
            partial = record.with_suffix(".partial")
            partial.write_text(json.dumps(payload), encoding="utf-8")
            os.replace(partial, record)
        _CHECKED[key] = args
        return args


def _check(runtime: LLMRuntime, model_path: Path | None, log_stem: Path) -> tuple[str, ...]:
    # Imported here: the server module uses this one to choose its options.
    from .server import LocalLLMServer

    log_stem.parent.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    for number, args in enumerate(_ATTEMPTS, start=1):
        log_path = log_stem.with_name(f"{log_stem.name}-attempt{number}.log")
        server = LocalLLMServer(
            runtime=runtime,
            model_path=model_path,
            parallel=1,
            ctx_per_slot=512,
            log_path=log_path,
            extra_args=args,
        )
        try:
            with server:
                _one_completion(server.base_url, server.model_name)
        except (LocalLLMError, httpx.HTTPError) as exc:
            shown = " ".join(args) or "default options"
            failures.append(f"with {shown}: {exc} (log: {log_path})")
            continue
        log_path.unlink(missing_ok=True)
        return args
    raise LocalLLMError(
        f"the {runtime.kind} runtime ({runtime.label}) does not serve a completion on "
        "this machine; tried:\n  "
        + "\n  ".join(failures)
        + "\nSet $VERIFLEET_LLAMA_SERVER to a llama-server that works here, or report "
        "the logs above."
    )


def _one_completion(base_url: str, model: str) -> None:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 4,
        "temperature": 0,
    }
    with httpx.Client(timeout=60, trust_env=False) as client:
        reply = client.post(f"{base_url}/chat/completions", json=body)
    reply.raise_for_status()
    choices = reply.json().get("choices") or []
    if not choices or "message" not in choices[0]:
        raise LocalLLMError(f"the smoke completion returned no message: {reply.text[:200]}")
