"""Bytecode the sandbox executors start from.

Executors run ``python -I -B``: they never write bytecode (their file system is
read-only), and where ``PYTHONDONTWRITEBYTECODE`` is set no other process wrote
any either, so every executor compiled pydantic, the template runtime and the
standard library modules it imports from source, each time (issue 36: a large
part of an executor's start). The host prepares that bytecode once, in a cache
folder of its own (``$VERIFLEET_CACHE_DIR/pycache/...``, default
``~/.cache/verifleet``), and starts executors with ``-X pycache_prefix`` pointing
at it (bound read-only into bubblewrap in strict mode). Python checks each file
against its source's modification time and size, so a stale or missing file
only means that module is compiled from source, as before.

``VERIFLEET_SANDBOX_BYTECODE=0`` turns this off.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import py_compile
import subprocess
import sys
import threading
from pathlib import Path

__all__ = ["ENV_BYTECODE", "bytecode_ready", "default_bytecode_dir", "prepare_bytecode"]

log = logging.getLogger(__name__)

ENV_BYTECODE = "VERIFLEET_SANDBOX_BYTECODE"

# What an executor imports, and the modules they import in turn: a probe
# process imports them and lists every source file it loaded.
_PROBE = """\
import json, sys
import verifleet.sandbox._executor, verifleet.sandbox._router, verifleet.sandbox._children
import verifleet.sandbox._runtime, verifleet.sandbox._pipes, verifleet.templates
try:
    import verifleet.sandbox._seccomp
except Exception:
    pass
files = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
print(json.dumps(sorted(f for f in files if f and f.endswith(".py"))))
"""

_prepared: dict[str, bool] = {}
_preparing: set[str] = set()
_lock = threading.Lock()
_prepare_lock = threading.Lock()


def default_bytecode_dir() -> str | None:
    """The folder for this interpreter and environment, or None when
    ``VERIFLEET_SANDBOX_BYTECODE`` is ``0``."""
    if os.environ.get(ENV_BYTECODE, "1").strip() in ("0", "false", "no", "off"):
        return None
    configured = os.environ.get("VERIFLEET_CACHE_DIR")
    root = Path(configured) if configured else Path.home() / ".cache" / "verifleet"
    # One folder per interpreter and environment: their modules differ.
    where = f"{sys.executable}\0{sys.prefix}\0{Path(__file__).resolve().parent}"
    tag = hashlib.sha256(where.encode()).hexdigest()[:16]
    return str(root / "pycache" / f"{sys.implementation.cache_tag}-{tag}")


def _target(source: str, prefix: str) -> str:
    """Where ``-X pycache_prefix=prefix`` looks for ``source``'s bytecode."""
    head, name = os.path.split(os.path.abspath(source))
    base = name.rsplit(".", 1)[0]
    return os.path.join(prefix, head.lstrip(os.sep), f"{base}.{sys.implementation.cache_tag}.pyc")


def _fresh(source: str, target: str) -> bool:
    """Whether ``target`` holds bytecode Python accepts for ``source`` as it is."""
    try:
        with open(target, "rb") as fh:
            header = fh.read(16)
        stat = os.stat(source)
    except OSError:
        return False
    if len(header) < 16 or int.from_bytes(header[4:8], "little") != 0:
        return False
    mtime = int.from_bytes(header[8:12], "little")
    size = int.from_bytes(header[12:16], "little")
    return mtime == int(stat.st_mtime) & 0xFFFFFFFF and size == stat.st_size & 0xFFFFFFFF


def _sources(prefix: str) -> list[str]:
    """The executor's source files: listed once by a probe process (kept in
    ``modules.json``), plus every module of the sandbox and template runtime."""
    listing = Path(prefix) / "modules.json"
    try:
        files: list[str] = json.loads(listing.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        probe = subprocess.run(
            [sys.executable, "-I", "-B", "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
            env={"PATH": os.defpath, "PYTHONDONTWRITEBYTECODE": "1"},
            cwd="/",
        )
        files = json.loads(probe.stdout)
        listing.parent.mkdir(parents=True, exist_ok=True)
        partial = listing.with_name(f".modules.{os.getpid()}.json")
        partial.write_text(json.dumps(files), encoding="utf-8")
        partial.replace(listing)
    here = Path(__file__).resolve().parent
    own = [str(p) for d in (here, here.parent / "templates") for p in sorted(d.glob("*.py"))]
    return sorted(set(files) | set(own))


def bytecode_ready(prefix: str) -> bool:
    """Whether executors may start with ``-X pycache_prefix=prefix`` now.

    The first time a process asks, a folder prepared before is checked (and
    what changed compiled) at once; one never prepared is prepared in a
    background thread (:func:`prepare_bytecode`: seconds) and the answer is
    False until that is done: an executor is never held back for a first
    preparation. Never raises.
    """
    with _lock:
        done = _prepared.get(prefix)
        if done is not None:
            return done
    if (Path(prefix) / "modules.json").exists():
        # Prepared before: checking it (and compiling what changed) is quick.
        return prepare_bytecode(prefix)
    with _lock:
        if prefix not in _preparing:
            _preparing.add(prefix)
            threading.Thread(
                target=prepare_bytecode, args=(prefix,), name="verifleet-bytecode", daemon=True
            ).start()
        return False


def prepare_bytecode(prefix: str) -> bool:
    """Compile what is missing or stale under ``prefix``, once per process.

    Returns:
        Whether executors may start with ``-X pycache_prefix=prefix``: False
        when the folder cannot be prepared (logged; executors then compile
        from source, as without it). Never raises.
    """
    with _prepare_lock:
        with _lock:
            done = _prepared.get(prefix)
        if done is not None:
            return done
        try:
            compiled = 0
            for source in _sources(prefix):
                target = _target(source, prefix)
                if os.path.exists(source) and not _fresh(source, target):
                    py_compile.compile(source, cfile=target, doraise=True)
                    compiled += 1
            log.debug("sandbox bytecode in %s: %d files compiled", prefix, compiled)
            ok = True
        except Exception as exc:  # any failure: executors compile from source
            log.warning("sandbox bytecode cache %s not usable: %s", prefix, exc)
            ok = False
        with _lock:
            _prepared[prefix] = ok
        return ok
