"""Seccomp filters for the executor's processes, built with libseccomp through ctypes.

The executor is a tree (see ``_executor``): a router that never runs untrusted
code, a spawner that forks template processes, template processes that run
class bodies (and, with ``VERIFLEET_SANDBOX_FRESH=call``, fork one child per
call), one-shot or long-lived trait processes. Each installs the filter of its
role; filters stack (a child inherits its parent's and may only add to it, and
the kernel takes the strictest answer), so a call child is held by the
spawner's, the template's and the unit's.

Every filter is an **allow-list**: a system call not named for the role fails
with EPERM. All roles share :data:`BASE_ALLOWED` (what CPython needs to compute,
import, wait and manage its own memory, signal handlers and descriptors:
``open``/``openat`` for reading only, ``prlimit64`` on itself only
(``pid == 0``), ``ioctl`` and ``fcntl`` for the few commands CPython uses), and
nothing in it reaches another process. What each role adds:

- ``router``: ``kill`` to any pid (it kills children that overran; it runs no
  untrusted code). No ``fork``/``clone``.
- ``spawner``: ``clone`` with exactly the flags of ``fork()`` (no
  ``CLONE_PARENT``, no threads, no namespaces), ``setpgid``, the ``prctl``
  options and ``seccomp`` its children use before they add their own layer, and
  ``kill`` (narrowed by its children's layers; it signals nothing itself).
- ``template`` (a process that runs class bodies): ``kill`` and ``tgkill`` to
  itself or its own process group only (``0``, its pid, minus its pid);
  ``prctl`` for ``PR_SET_PDEATHSIG``/``PR_SET_SECCOMP``/``PR_SET_NO_NEW_PRIVS``
  and ``seccomp`` (to add the unit layer); ``clone`` with ``fork()``'s flags only
  when calls get a process each (``fork_per_call``, profile
  ``template-fork``), none otherwise. No ``setpgid``/``setsid``: what it forks
  stays in its group, killed with it. A template process that runs its calls
  itself (``template`` and ``job`` fresh state) takes the ``unit`` layer
  instead, before its first class body: compiling needs nothing it refuses.
- ``unit`` (a process about to run ``verify()``, validators, traits, and a
  template process that runs its calls itself): nothing beyond the base: no
  processes, no signals at all, no ``prctl``/``seccomp``. The spawner builds
  it once (:func:`unit_program`, :class:`PreparedProgram`); each process
  loads it with one system call.

Refused to every role: ``tkill``, ``rt_sigqueueinfo``, ``rt_tgsigqueueinfo``,
``pidfd_open``/``pidfd_send_signal``/``pidfd_getfd``, ``process_vm_readv``/
``writev``, ``ptrace``, ``setpriority``, ``sched_setaffinity``/
``sched_setscheduler``/``sched_setparam`` but on itself, ``prlimit64`` but on
itself, sockets, ``execve``, ``vfork``, namespaces and mounts, io_uring, ``bpf``,
kernel keyrings and modules, and every way to create or change a file.
``clone3`` and ``openat2`` fail with ENOSYS, so libc falls back to ``clone`` and
``openat``, whose arguments a filter can read.
"""

from __future__ import annotations

import ctypes
import errno
import os
from typing import Any

from ._errors import SandboxUnavailable

__all__ = [
    "BASE_ALLOWED",
    "PROFILES",
    "PreparedProgram",
    "SeccompUnavailable",
    "install_filter",
    "unit_program",
]

_LIBRARY = "libseccomp.so.2"

# Actions and comparison operators of <seccomp.h> (stable ABI values).
_ACT_ALLOW = 0x7FFF0000
_ACT_ERRNO = 0x00050000
_CMP_MASKED_EQ = 7

#: pid_t and int arguments are 32 bits: compare what the kernel reads.
_LOW32 = 0xFFFFFFFF

#: ``open`` flags that write, create or truncate: refused in every role.
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

#: ``clone`` flags of glibc's ``fork()`` (CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID
#: | SIGCHLD): the only clone any role may make. No CLONE_PARENT (a child that
#: is not its creator's), no CLONE_THREAD, no namespace flags.
FORK_FLAGS = 0x01000000 | 0x00200000 | 17

#: What every process of the executor may call (all roles): computing,
#: importing (reading files), waiting, its own memory, signal handlers, timers
#: and descriptors. Nothing here acts on another process.
BASE_ALLOWED: tuple[str, ...] = (
    # descriptors it holds
    "read",
    "readv",
    "pread64",
    "preadv",
    "preadv2",
    "write",
    "writev",
    "close",
    "close_range",
    "lseek",
    "dup",
    "dup2",
    "dup3",
    "pipe",
    "pipe2",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "epoll_create1",
    "epoll_ctl",
    "epoll_wait",
    "epoll_pwait",
    # reading the file system (opening: below, read-only)
    "stat",
    "fstat",
    "lstat",
    "newfstatat",
    "statx",
    "statfs",
    "fstatfs",
    "access",
    "faccessat",
    "faccessat2",
    "readlink",
    "readlinkat",
    "getdents",
    "getdents64",
    "getcwd",
    "chdir",
    "fchdir",
    # its own memory
    "brk",
    "mmap",
    "munmap",
    "mremap",
    "mprotect",
    "madvise",
    # its own signal handling and timers
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "rt_sigpending",
    "rt_sigtimedwait",
    "rt_sigsuspend",
    "sigaltstack",
    "pause",
    "alarm",
    "getitimer",
    "setitimer",
    "restart_syscall",
    # time and identity
    "clock_gettime",
    "clock_getres",
    "clock_nanosleep",
    "nanosleep",
    "gettimeofday",
    "time",
    "getpid",
    "getppid",
    "gettid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getgroups",
    "getresuid",
    "getresgid",
    "getpgid",
    "getpgrp",
    "getsid",
    "getpriority",
    "getrusage",
    "times",
    "sysinfo",
    "uname",
    "getrandom",
    "getcpu",
    "sched_getaffinity",
    "sched_getparam",
    "sched_getscheduler",
    "sched_yield",
    "getrlimit",
    "setrlimit",  # acts on the caller only
    # threads' bookkeeping of the process itself, waiting, leaving
    "futex",
    "set_robust_list",
    "rseq",
    "set_tid_address",
    "wait4",
    "waitid",
    "exit",
    "exit_group",
)

#: ``ioctl`` requests CPython makes (isatty, terminal size, blocking and
#: close-on-exec flags).
_IOCTLS = (0x5401, 0x5413, 0x5421, 0x5450, 0x5451)  # TCGETS TIOCGWINSZ FIONBIO FIONCLEX FIOCLEX

#: ``fcntl`` commands CPython makes: F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL,
#: F_DUPFD_CLOEXEC (no locks: a lock on a shared file would reach other processes).
_FCNTLS = (0, 1, 2, 3, 4, 1030)

#: ``prctl`` options a template process and its children use before their own
#: layer: PR_SET_PDEATHSIG, PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS.
_TEMPLATE_PRCTLS = (1, 22, 38)

#: ... and what the spawner's children also use before theirs:
#: PR_SET_CHILD_SUBREAPER.
_SPAWNER_PRCTLS = (*_TEMPLATE_PRCTLS, 36)

#: Failed with ENOSYS so libc falls back to a call the filter can inspect
#: (clone3 and openat2 pass their flags in a struct a filter cannot read).
NOSYS_SYSCALLS: tuple[str, ...] = ("clone3", "openat2")

#: The roles, outermost first.
PROFILES = ("router", "spawner", "template", "template-fork", "unit")


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


def _arg_is(arg: int, value: int) -> tuple[int, int, int, int]:
    """Argument ``arg``'s low 32 bits equal ``value`` (as the kernel reads an int)."""
    return (arg, _CMP_MASKED_EQ, _LOW32, value & _LOW32)


def _allow_each(lib: Any, ctx: int, name: str, arg: int, values: tuple[int, ...]) -> None:
    for value in values:
        _rule(lib, ctx, _ACT_ALLOW, name, _arg_is(arg, value))


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
    lib, ctx = _build(profile, os.getpid())
    try:
        rc = lib.seccomp_load(ctx)
        if rc < 0:
            raise SeccompUnavailable(f"the kernel refused the seccomp filter: {os.strerror(-rc)}")
    finally:
        lib.seccomp_release(ctx)


def unit_program() -> bytes:
    """The ``unit`` filter compiled to BPF, to load in a forked child with
    :meth:`PreparedProgram.load`: building it with libseccomp in every child would cost
    more than the rest of a call. (The unit layer names no pid, so one program
    serves every child.)

    Raises:
        SeccompUnavailable: libseccomp cannot be loaded or cannot export.
    """
    lib, ctx = _build("unit", None)
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


class PreparedProgram:
    """A BPF program from :func:`unit_program` with every ctypes object its
    loading needs made in advance: a process that forks children which each
    load it (the spawner, a template process) prepares it once, so that a
    child only makes one foreign call (and writes to few of its parent's
    pages, each of which a fork copies on the first write)."""

    def __init__(self, program: bytes) -> None:
        from ._pipes import libc

        self._buffer = ctypes.create_string_buffer(program, len(program))
        self._fprog = _SockFprog(len(program) // 8, ctypes.cast(self._buffer, ctypes.c_void_p))
        self._pointer = ctypes.pointer(self._fprog)
        self._prctl = libc().prctl
        self._args = (_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, self._pointer, 0, 0)

    def load(self) -> None:
        """Load the program on the calling process (no_new_privs must already
        be set: it is, by the inherited filters).

        Raises:
            SeccompUnavailable: the kernel refused it.
        """
        if self._prctl(*self._args) != 0:
            err = ctypes.get_errno()
            raise SeccompUnavailable(f"the kernel refused the seccomp filter: {os.strerror(err)}")


def _build(profile: str, own_pid: int | None) -> tuple[Any, int]:
    """A libseccomp context holding ``profile``'s allow-list (the caller
    releases it); ``own_pid`` is the pid the process may signal (None: none)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown seccomp profile {profile!r}")
    lib = _library()
    ctx = lib.seccomp_init(_ACT_ERRNO | errno.EPERM)
    if not ctx:
        raise SeccompUnavailable("seccomp_init failed")
    try:
        _base_rules(lib, ctx)
        if profile == "router":
            _rule(lib, ctx, _ACT_ALLOW, "kill")
        elif profile == "spawner":
            _rule(lib, ctx, _ACT_ALLOW, "kill")
            _rule(lib, ctx, _ACT_ALLOW, "tgkill")
            _rule(lib, ctx, _ACT_ALLOW, "clone", _arg_is(0, FORK_FLAGS))
            _rule(lib, ctx, _ACT_ALLOW, "setpgid")
            _rule(lib, ctx, _ACT_ALLOW, "seccomp")
            _allow_each(lib, ctx, "prctl", 0, _SPAWNER_PRCTLS)
        elif profile in ("template", "template-fork"):
            if own_pid is not None:
                _allow_each(lib, ctx, "kill", 0, (0, own_pid, -own_pid))
                _rule(lib, ctx, _ACT_ALLOW, "tgkill", _arg_is(0, own_pid))
            _rule(lib, ctx, _ACT_ALLOW, "seccomp")
            _allow_each(lib, ctx, "prctl", 0, _TEMPLATE_PRCTLS)
            if profile == "template-fork":
                _rule(lib, ctx, _ACT_ALLOW, "clone", _arg_is(0, FORK_FLAGS))
    except BaseException:
        lib.seccomp_release(ctx)
        raise
    return lib, ctx


def _base_rules(lib: Any, ctx: int) -> None:
    for name in BASE_ALLOWED:
        _rule(lib, ctx, _ACT_ALLOW, name)
    for name in NOSYS_SYSCALLS:
        _rule(lib, ctx, _ACT_ERRNO | errno.ENOSYS, name)
    # Opening for reading only (imports, the Python prefix); no flag that
    # writes, creates, truncates or appends.
    _rule(lib, ctx, _ACT_ALLOW, "open", (1, _CMP_MASKED_EQ, _WRITE_FLAGS, 0))
    _rule(lib, ctx, _ACT_ALLOW, "openat", (2, _CMP_MASKED_EQ, _WRITE_FLAGS, 0))
    # On itself only: pid 0 (what libc passes for the calling process).
    _rule(lib, ctx, _ACT_ALLOW, "prlimit64", _arg_is(0, 0))
    for name in ("sched_setaffinity", "sched_setscheduler", "sched_setparam"):
        _rule(lib, ctx, _ACT_ALLOW, name, _arg_is(0, 0))
    _allow_each(lib, ctx, "ioctl", 1, _IOCTLS)
    _allow_each(lib, ctx, "fcntl", 1, _FCNTLS)
