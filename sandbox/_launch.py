"""The command line that starts one executor (inside bubblewrap in strict mode).

Strict mode wraps the executor in ``bwrap``: every namespace unshared (no network
but an empty loopback, own pid/ipc/uts/cgroup/user namespaces), an empty tmpfs
root with read-only binds of only what the executor imports (the Python prefix,
the virtual environment, verifleet's ``schemas`` and ``sandbox`` packages, the
system libraries), a fresh tmpfs ``/tmp``, a minimal ``/dev``, no ``/proc``, no
``/etc`` beyond the loader cache, no environment, no capabilities, an unprivileged
uid, a new session (no terminal to inject input into), and death with the parent.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from ._settings import SandboxMode, SandboxSettings

__all__ = ["BWRAP", "bind_paths", "executor_command"]

#: The bubblewrap binary (Debian/Ubuntu package ``bubblewrap``).
BWRAP = "bwrap"

# Unprivileged uid/gid inside the sandbox ("nobody").
_SANDBOX_ID = "65534"

# Top-level system directories an executor needs (shared libraries, loader).
_SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin")


def _package_dirs() -> list[str]:
    """Directories holding the packages the executor imports from verifleet."""
    import verifleet.schemas
    import verifleet.templates

    from . import __file__ as sandbox_init

    # The root package is loaded (this module is inside it); looked up rather
    # than imported so the import contracts see no dependency on its lazy names.
    root = sys.modules["verifleet"].__file__
    packages = (verifleet.schemas.__file__, verifleet.templates.__file__)
    assert root is not None and all(packages)
    found = [Path(root).parent, *(Path(str(p)).parent for p in packages)]
    found.append(Path(sandbox_init).parent)
    # The third-party packages it imports, wherever the environment keeps them
    # (a virtualenv may reach another one's site-packages through a .pth file).
    import cloudpickle
    import pydantic
    import pydantic_core

    for module in (pydantic, pydantic_core, cloudpickle):
        assert module.__file__ is not None
        found.append(Path(module.__file__).parent.parent)
    return [str(p.resolve()) for p in found]


def bind_paths() -> list[str]:
    """Host paths bound read-only into the sandbox at the same place (deduplicated:
    a path inside another one is dropped)."""
    candidates = {
        str(Path(sys.base_prefix).resolve()),
        str(Path(sys.prefix).resolve()),
        sys.prefix,  # the venv as named (its interpreter symlink points into base)
        *_package_dirs(),
    }
    ordered = sorted(candidates, key=len)
    kept: list[str] = []
    for path in ordered:
        if any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            continue
        if not os.path.isdir(path):
            continue
        kept.append(path)
    return kept


def _system_args() -> list[str]:
    args: list[str] = []
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    if os.path.exists("/etc/ld.so.cache"):
        args += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    return args


def bwrap_prefix(bwrap: str, extra: tuple[str, ...] = ()) -> list[str]:
    """The bubblewrap part of the command (everything before the executor);
    ``extra`` folders are bound read-only too (the bytecode cache)."""
    args = [
        bwrap,
        "--unshare-all",
        "--unshare-user",
        "--uid",
        _SANDBOX_ID,
        "--gid",
        _SANDBOX_ID,
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--setenv",
        "PYTHONDONTWRITEBYTECODE",
        "1",
        "--setenv",
        "LANG",
        "C.UTF-8",
        *_system_args(),
        # The fresh /tmp comes before the code binds: a checkout or virtualenv that
        # lives under /tmp (CI clones, pytest's tmp_path) is bound on top of it,
        # instead of being hidden by it.
        *("--dev", "/dev", "--tmpfs", "/tmp"),
    ]
    for path in (*bind_paths(), *extra):
        args += ["--ro-bind", path, path]
    args += ["--chdir", "/tmp", "--remount-ro", "/"]
    return args


def executor_command(settings: SandboxSettings) -> list[str]:
    """The argv that starts one executor under ``settings.mode``.

    Raises:
        FileNotFoundError: strict mode and no ``bwrap`` on PATH.
    """
    python = [
        sys.executable,
        "-I",
        "-B",
        # Bytecode the host prepared (_bytecode): never written from inside.
        *(("-X", f"pycache_prefix={settings.bytecode_dir}") if settings.bytecode_dir else ()),
        "-m",
        "verifleet.sandbox._executor",
        "--mode",
        settings.mode.value,
        "--memory-mb",
        str(settings.memory_mb),
        "--cpu-seconds",
        str(settings.cpu_per_call),
        "--max-templates",
        str(settings.max_templates),
        "--timeout",
        str(settings.timeout),
        "--template-processes",
        str(settings.template_processes),
        "--templates-per-process",
        str(settings.templates_per_process),
        "--fresh-state",
        settings.fresh_state,
    ]
    if settings.mode is not SandboxMode.STRICT:
        return python
    bwrap = shutil.which(BWRAP)
    if bwrap is None:
        raise FileNotFoundError(
            "bwrap (bubblewrap) is not installed; Debian/Ubuntu: apt-get install bubblewrap"
        )
    extra = (settings.bytecode_dir,) if settings.bytecode_dir else ()
    return [*bwrap_prefix(bwrap, extra), *python]
