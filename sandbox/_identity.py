"""Who an executor runs as in ``seccomp`` mode: never the worker's own user.

Without bubblewrap an executor shares the worker's filesystem, so what keeps the
worker's secrets (``/proc/<worker>/environ``: model API keys, the Redis URL with
its password) and its processes (signals) out of reach of template code that got
past the interpreter guard is the executor's identity. In order of preference:

1. **Another uid** (``uid``): the worker can change uids (root, or
   ``CAP_SETUID`` + ``CAP_SETGID``, as in a container started as root with
   Docker's default capabilities): the executor starts as
   ``VERIFLEET_SANDBOX_UID`` (default 65534, ``nobody``), no supplementary
   groups and no capabilities. A process of another uid can neither read the
   worker's ``/proc/<pid>/environ`` (or ``mem``, ``fd``, ...) nor signal it,
   nor read the worker user's private files. Where user namespaces are allowed
   too, it also gets the namespaces of 2.
2. **Own user, pid and mount namespaces** (``namespaces``): an unprivileged
   worker on a kernel that allows user namespaces (but without bubblewrap, or
   with an operator who chose ``seccomp``), or one whose Python the sandbox uid
   cannot read: the executor starts under ``unshare --user --pid --mount-proc``
   (util-linux): it sees a ``/proc`` with its own processes only, so it can
   name (signal, read) no process of the worker's.
3. **Nothing** (``none``): an unprivileged worker where user namespaces are
   forbidden (Docker's default seccomp profile, most Kubernetes pods run as
   non-root). The executor runs as the worker's user: template code that gets
   past the interpreter guard can read the worker's environment and signal its
   processes. The commands say so loudly at start (:func:`isolation_warning`).

Executors also make themselves non-dumpable at start (``_executor``), so that
executors of one uid cannot read each other's memory or environment through
``/proc`` either.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from enum import StrEnum
from typing import NamedTuple

from verifleet.schemas import ConfigError

from ._settings import SandboxMode

__all__ = [
    "DEFAULT_UID",
    "ENV_UID",
    "Identity",
    "Separation",
    "executor_identity",
    "isolation_warning",
    "sandbox_uid",
]

#: The environment variable naming the uid (and gid) executors run as in seccomp mode.
ENV_UID = "VERIFLEET_SANDBOX_UID"

#: ``nobody``: owns no file and no process of the worker.
DEFAULT_UID = 65534

# Capability numbers (linux/capability.h).
_CAP_SETGID = 6
_CAP_SETUID = 7


class Separation(StrEnum):
    """How an executor is kept apart from the worker's user (see the module docs)."""

    UID = "uid"
    NAMESPACES = "namespaces"
    NONE = "none"


class Identity(NamedTuple):
    """How to start an executor: as ``uid`` (None: the worker's own), under
    ``prefix`` (a command line before the executor's own)."""

    separation: Separation
    uid: int | None = None
    prefix: tuple[str, ...] = ()


def sandbox_uid() -> int:
    """The uid executors run as in seccomp mode (``VERIFLEET_SANDBOX_UID``).

    Raises:
        ConfigError: Not a whole number between 1 and 4294967294.
    """
    raw = os.environ.get(ENV_UID, "").strip()
    if not raw:
        return DEFAULT_UID
    try:
        uid = int(raw)
    except ValueError:
        raise ConfigError(f"{ENV_UID}={raw!r} is not a uid (a whole number)") from None
    if not 0 < uid < 2**32 - 1:
        raise ConfigError(f"{ENV_UID}={raw!r} must be between 1 and 4294967294 (not root)")
    return uid


def _can_change_uid() -> bool:
    """Whether this process holds CAP_SETUID and CAP_SETGID (root in a container
    keeps them with Docker's default capabilities; a non-root user has neither)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    caps = int(line.split()[1], 16)
                    return bool(caps >> _CAP_SETUID & 1 and caps >> _CAP_SETGID & 1)
    except OSError:
        pass
    return os.geteuid() == 0


def _namespaces_prefix(uid: int) -> tuple[str, ...] | None:
    """The ``unshare`` command line (util-linux), or None when it is not installed."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    return (
        unshare,
        f"--map-user={uid}",
        f"--map-group={uid}",
        "--pid",
        "--fork",
        "--kill-child",
        "--mount-proc",
    )


def _starts(identity: Identity) -> bool:
    """Whether an executor's interpreter starts and imports the executor under
    ``identity`` (tried once per candidate: Docker's default seccomp profile
    refuses user namespaces, a runtime that masks parts of ``/proc`` refuses the
    mount, and a Python installed where ``uid`` cannot read it cannot start)."""
    command = [*identity.prefix, sys.executable, "-I", "-c", "import verifleet.sandbox._executor"]
    try:
        probe = subprocess.run(
            command,
            capture_output=True,
            timeout=60,
            check=False,
            cwd="/",
            env={"PATH": os.defpath},
            user=identity.uid,
            group=identity.uid,
            extra_groups=None if identity.uid is None else [],
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


@functools.cache
def _identity(uid: int, worker_uid: int) -> Identity:
    """The first of: another uid in namespaces, another uid, namespaces, nothing
    that starts an executor here."""
    candidates: list[Identity] = []
    prefix = _namespaces_prefix(uid)
    if _can_change_uid() and uid != worker_uid:
        if prefix is not None:
            candidates.append(Identity(Separation.UID, uid, prefix))
        candidates.append(Identity(Separation.UID, uid))
    if prefix is not None:
        candidates.append(Identity(Separation.NAMESPACES, None, prefix))
    for candidate in candidates:
        if _starts(candidate):
            return candidate
    return Identity(Separation.NONE)


def executor_identity(mode: SandboxMode) -> Identity:
    """How executors of ``mode`` start: in seccomp mode the strongest separation
    this process can set up (decided once per process); strict mode has
    bubblewrap's own user namespace and rlimits-only none.

    Raises:
        ConfigError: An invalid ``VERIFLEET_SANDBOX_UID``.
    """
    if mode is not SandboxMode.SECCOMP:
        return Identity(Separation.NONE)
    return _identity(sandbox_uid(), os.geteuid())


def isolation_warning(mode: SandboxMode) -> str | None:
    """What an operator must hear at start when seccomp-mode executors run as
    the worker's own user; None when they do not (or another mode is set).

    Raises:
        ConfigError: An invalid ``VERIFLEET_SANDBOX_UID``.
    """
    if mode is not SandboxMode.SECCOMP:
        return None
    if executor_identity(mode).separation is not Separation.NONE:
        return None
    return (
        f"sandbox mode 'seccomp': executors run as this process's own user (uid "
        f"{os.geteuid()}): it can neither change uids (start it as root, or with CAP_SETUID "
        "and CAP_SETGID, so executors run as "
        f"{ENV_UID}={sandbox_uid()}) nor create user namespaces. Template code that gets "
        "past the interpreter guard can read this process's environment (API keys, the "
        "Redis password) through /proc and signal its processes; see docs/security.md"
    )
