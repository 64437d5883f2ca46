"""Seccomp filters for the executor's processes, built with libseccomp through ctypes.

The executor is a tree (see ``_executor``): a router that never runs untrusted
code, a spawner that forks template processes, template processes that fork one
child per call. Each installs a filter for its role; filters stack (a child
inherits its parent's and may only add to it), so a unit child is held by all
three:

- ``router``: allows by default (CPython needs a long, version-dependent list
  of system calls) and refuses, with EPERM, everything that reaches outside the
  process: sockets, running programs, new processes, debugging other processes,
  namespaces and mounts, kernel keyrings, io_uring (which would bypass the
  filter), and every way to create or change a file (``open`` for writing,
  ``creat``, ``rename``, ``unlink``, ``mkdir``, ``chmod``...). Its pipes stay
  usable: they are already open.
- ``spawner``: as ``router``, but ``fork`` (a ``clone`` without ``CLONE_THREAD``)
  is allowed, and signals may go to other processes of the executor (it kills
  what overran). Threads stay refused.
- ``template``: added by a template process before it compiles a template:
  no changing its process group or session (its kill takes all it forked).
- ``unit``: added by a process about to run untrusted code: no new processes
  at all, no signals but to itself.
"""

from __future__ import annotations

import ctypes
import errno
import os
from typing import Any

from ._errors import SandboxUnavailable

__all__ = ["SeccompUnavailable", "install_filter", "load_program", "unit_program"]

_LIBRARY = "libseccomp.so.2"

# Actions and comparison operators of <seccomp.h> (stable ABI values).
_ACT_ALLOW = 0x7FFF0000
_ACT_ERRNO = 0x00050000
_CMP_NE = 1
_CMP_MASKED_EQ = 7

_O_WRONLY = os.O_WRONLY
_O_RDWR = os.O_RDWR
_O_CREAT = os.O_CREAT
_O_TRUNC = os.O_TRUNC
_O_APPEND = os.O_APPEND

#: Refused outright.
DENIED_SYSCALLS: tuple[str, ...] = (
    # network
    "socket",
    "socketpair",
    "connect",
    "bind",
    "listen",
    "accept",
    "accept4",
    # programs and processes (fork and clone: per profile, below)
    "execve",
    "execveat",
    "vfork",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "tkill",
    "pidfd_open",
    "pidfd_send_signal",
    "pidfd_getfd",
    # namespaces, mounts, kernel interfaces
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "reboot",
    "personality",
    # creating or changing files
    "creat",
    "truncate",
    "rename",
    "renameat",
    "renameat2",
    "unlink",
    "unlinkat",
    "mkdir",
    "mkdirat",
    "rmdir",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "mknod",
    "mknodat",
    "chmod",
    "fchmod",
    "fchmodat",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "utimes",
    "utimensat",
    "memfd_create",
)

#: Refused with ENOSYS so libc falls back to a call the filter can inspect
#: (clone3 and openat2 pass their flags in a struct a filter cannot read).
NOSYS_SYSCALLS: tuple[str, ...] = ("clone3", "openat2")


class SeccompUnavailable(SandboxUnavailable):
    """libseccomp is missing or the kernel refused the filter."""


class _ArgCmp(ctypes.Structure):
    _fields_ = (
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    )


def _library() -> Any:
    try:
        lib = ctypes.CDLL(_LIBRARY, use_errno=True)
    except OSError as exc:
        raise SeccompUnavailable(
            f"{_LIBRARY} cannot be loaded ({exc}); Debian: apt-get install libseccomp2"
        ) from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = (ctypes.c_uint32,)
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
    lib.seccomp_rule_add_array.restype = ctypes.c_int
    lib.seccomp_rule_add_array.argtypes = (
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    )
    lib.seccomp_load.restype = ctypes.c_int
    lib.seccomp_load.argtypes = (ctypes.c_void_p,)
    lib.seccomp_release.restype = None
    lib.seccomp_release.argtypes = (ctypes.c_void_p,)
    lib.seccomp_export_bpf.restype = ctypes.c_int
    lib.seccomp_export_bpf.argtypes = (ctypes.c_void_p, ctypes.c_int)
    return lib


def _rule(lib: Any, ctx: int, action: int, name: str, *cmps: tuple[int, int, int, int]) -> None:
    number = lib.seccomp_syscall_resolve_name(name.encode("ascii"))
    if number < 0:
        return  # not a system call on this architecture (e.g. fork on arm64)
    array = (_ArgCmp * max(1, len(cmps)))(*(_ArgCmp(*c) for c in cmps))
    rc = lib.seccomp_rule_add_array(ctx, action, number, len(cmps), array)
    if rc < 0:
        raise SeccompUnavailable(f"seccomp rule for {name} refused: {os.strerror(-rc)}")


_CLONE_THREAD = 0x00010000

#: What each role adds to the filter it inherits.
PROFILES = ("router", "spawner", "template", "unit")

#: Refused to a process that runs untrusted code, on top of its parent's filter.
UNIT_DENIED: tuple[str, ...] = ("fork", "clone", "kill", "setpgid", "setsid", "prctl", "seccomp")

#: Refused to a template process, on top of the spawner's filter.
TEMPLATE_DENIED: tuple[str, ...] = ("setpgid", "setsid")


def install_filter(profile: str = "router") -> None:
    """Install the filter of ``profile`` (see the module docstring) on the calling
    process (irreversible).

    Also sets no_new_privs (libseccomp's default), so nothing the process runs
    later can gain privileges.

    Raises:
        SeccompUnavailable: libseccomp cannot be loaded or the kernel refuses the
            filter; the caller must not go on to run untrusted code.
        ValueError: an unknown profile.
    """
    lib, ctx = _build(profile)
    try:
        rc = lib.seccomp_load(ctx)
        if rc < 0:
            raise SeccompUnavailable(f"the kernel refused the seccomp filter: {os.strerror(-rc)}")
    finally:
        lib.seccomp_release(ctx)


def unit_program() -> bytes:
    """The ``unit`` filter compiled to BPF, to load in a forked child with
    :func:`load_program`: building it with libseccomp in every child would cost
    more than the rest of a call. ``tgkill`` is left to the process-wide rules
    (the child's pid is not known yet).

    Raises:
        SeccompUnavailable: libseccomp cannot be loaded or cannot export.
    """
    lib, ctx = _build("unit", own_pid=None)
    try:
        read_end, write_end = os.pipe()
        try:
            rc = lib.seccomp_export_bpf(ctx, write_end)
            os.close(write_end)
            write_end = -1
            if rc < 0:
                raise SeccompUnavailable(f"exporting the seccomp filter failed: {os.strerror(-rc)}")
            chunks = []
            while chunk := os.read(read_end, 65536):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(read_end)
            if write_end >= 0:
                os.close(write_end)
    finally:
        lib.seccomp_release(ctx)


_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def load_program(program: bytes) -> None:
    """Load a BPF program from :func:`unit_program` on the calling process
    (no_new_privs must already be set: it is, by the inherited filters).

    Raises:
        SeccompUnavailable: the kernel refused it.
    """
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    from ._pipes import libc

    if libc().prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise SeccompUnavailable(f"the kernel refused the seccomp filter: {os.strerror(err)}")


def _build(profile: str, own_pid: int | None = -1) -> tuple[Any, int]:
    """A libseccomp context holding ``profile``'s rules (the caller releases it)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown seccomp profile {profile!r}")
    lib = _library()
    ctx = lib.seccomp_init(_ACT_ALLOW)
    if not ctx:
        raise SeccompUnavailable("seccomp_init failed")
    try:
        deny = _ACT_ERRNO | errno.EPERM
        if profile in ("unit", "template"):
            for name in UNIT_DENIED if profile == "unit" else TEMPLATE_DENIED:
                _rule(lib, ctx, deny, name)
            if profile == "unit":
                if own_pid is not None:
                    pid = os.getpid() if own_pid == -1 else own_pid
                    _rule(lib, ctx, deny, "tgkill", (0, _CMP_NE, pid, 0))
                else:
                    _rule(lib, ctx, deny, "tgkill")
        else:
            _base_rules(lib, ctx, deny)
            if profile == "router":
                # The router kills what overran, and never forks.
                for name in ("fork", "clone"):
                    _rule(lib, ctx, deny, name)
            else:
                # Processes yes, threads no (the spawner and its template
                # processes are single-threaded).
                _rule(lib, ctx, deny, "clone", (0, _CMP_MASKED_EQ, _CLONE_THREAD, _CLONE_THREAD))
    except BaseException:
        lib.seccomp_release(ctx)
        raise
    return lib, ctx


def _base_rules(lib: Any, ctx: int, deny: int) -> None:
    for name in DENIED_SYSCALLS:
        _rule(lib, ctx, deny, name)
    for name in NOSYS_SYSCALLS:
        _rule(lib, ctx, _ACT_ERRNO | errno.ENOSYS, name)
    # Opening for writing, creating, truncating or appending is refused;
    # reading stays allowed (imports, the Python prefix).
    for flag in (_O_WRONLY, _O_RDWR, _O_CREAT, _O_TRUNC, _O_APPEND):
        _rule(lib, ctx, deny, "open", (1, _CMP_MASKED_EQ, flag, flag))
        _rule(lib, ctx, deny, "openat", (2, _CMP_MASKED_EQ, flag, flag))
