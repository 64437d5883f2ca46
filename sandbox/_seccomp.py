"""A seccomp filter for executors, built with libseccomp through ctypes.

Installed by the executor after its imports, before it reads the first request.
The filter allows by default (CPython needs a long, version-dependent list of
system calls) and refuses, with EPERM, everything that reaches outside the
process: sockets, running programs, new processes, debugging other processes,
namespaces and mounts, kernel keyrings, io_uring (which would bypass the filter),
and every way to create or change a file (``open`` for writing, ``creat``,
``rename``, ``unlink``, ``mkdir``, ``chmod``...). The executor's own pipes stay
writable: they are already open.
"""

from __future__ import annotations

import ctypes
import errno
import os
from typing import Any

from ._errors import SandboxUnavailable

__all__ = ["SeccompUnavailable", "install_filter"]

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
    # programs and processes (the executor is single-threaded)
    "execve",
    "execveat",
    "fork",
    "vfork",
    "clone",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kill",
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
    return lib


def _rule(lib: Any, ctx: int, action: int, name: str, *cmps: tuple[int, int, int, int]) -> None:
    number = lib.seccomp_syscall_resolve_name(name.encode("ascii"))
    if number < 0:
        return  # not a system call on this architecture (e.g. fork on arm64)
    array = (_ArgCmp * max(1, len(cmps)))(*(_ArgCmp(*c) for c in cmps))
    rc = lib.seccomp_rule_add_array(ctx, action, number, len(cmps), array)
    if rc < 0:
        raise SeccompUnavailable(f"seccomp rule for {name} refused: {os.strerror(-rc)}")


def install_filter() -> None:
    """Install the executor's filter on the calling process (irreversible).

    Also sets no_new_privs (libseccomp's default), so nothing the process runs
    later can gain privileges.

    Raises:
        SeccompUnavailable: libseccomp cannot be loaded or the kernel refuses the
            filter; the caller must not go on to run untrusted code.
    """
    lib = _library()
    ctx = lib.seccomp_init(_ACT_ALLOW)
    if not ctx:
        raise SeccompUnavailable("seccomp_init failed")
    try:
        deny = _ACT_ERRNO | errno.EPERM
        for name in DENIED_SYSCALLS:
            _rule(lib, ctx, deny, name)
        for name in NOSYS_SYSCALLS:
            _rule(lib, ctx, _ACT_ERRNO | errno.ENOSYS, name)
        # Signals only to this process (CPython's abort path uses tgkill on itself).
        _rule(lib, ctx, deny, "tgkill", (0, _CMP_NE, os.getpid(), 0))
        # Opening for writing, creating, truncating or appending is refused;
        # reading stays allowed (imports, the Python prefix).
        for flag in (_O_WRONLY, _O_RDWR, _O_CREAT, _O_TRUNC, _O_APPEND):
            _rule(lib, ctx, deny, "open", (1, _CMP_MASKED_EQ, flag, flag))
            _rule(lib, ctx, deny, "openat", (2, _CMP_MASKED_EQ, flag, flag))
        rc = lib.seccomp_load(ctx)
        if rc < 0:
            raise SeccompUnavailable(f"the kernel refused the seccomp filter: {os.strerror(-rc)}")
    finally:
        lib.seccomp_release(ctx)
