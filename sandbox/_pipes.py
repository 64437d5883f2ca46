"""Low-level plumbing of the executor's process tree: pipes with deadlines,
closing inherited descriptors, parent-death signals.

Everything waits with ``poll`` (never ``select``: a host process with more than
1,023 open descriptors — a reward server under load — would get descriptor
numbers ``select`` cannot watch).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import time
from collections.abc import Callable

from ._errors import SandboxError

__all__ = [
    "Deadline",
    "become_subreaper",
    "close_all_but",
    "die_with_parent",
    "drain",
    "kill_group",
    "libc",
    "process_gone",
    "read_line",
    "signal_name",
    "write_all",
]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


class Deadline(SandboxError):
    """A pipe did not deliver within its time."""


def read_line(
    fd: int,
    timeout: float | None,
    *,
    limit: int,
    alive: object = None,
    wait: Callable[[int, float], bool] | None = None,
) -> bytes:
    """Read from ``fd`` until a newline; return the line without it.

    Args:
        fd: A pipe's read end.
        timeout: Seconds to wait for the whole line (None: no limit).
        limit: Largest line accepted.
        alive: Optional callable; checked every 50 ms while waiting, and when it
            returns False the wait ends as at end of file (the writer died while
            someone else still holds the pipe's write end).
        wait: Optional ``wait(fd, seconds)`` that returns True once ``fd`` is
            readable, False when the seconds passed first; used instead of
            blocking in ``poll`` (needs ``timeout``; ``alive`` is not checked).

    Raises:
        Deadline: no complete line within ``timeout``.
        EOFError: the writer closed the pipe or died first (the message says
            how much was read).
        OverflowError: the line is longer than ``limit``.
    """
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    chunks: list[bytes] = []
    size = 0
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        wait_ms: float | None
        if end is None:
            wait_ms = 50 if alive is not None else None
        else:
            left = end - time.monotonic()
            if left <= 0:
                raise Deadline(f"no answer within {timeout:g} s")
            wait_ms = min(left, 0.05 if alive is not None else 3600.0) * 1000
        if wait is not None and end is not None:
            if not poller.poll(0) and not wait(fd, left):
                raise Deadline(f"no answer within {timeout:g} s")
        elif not poller.poll(wait_ms):
            if alive is not None and not alive():  # type: ignore[operator]
                raise EOFError(f"the writer died after {size} bytes")
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise EOFError(f"end of file after {size} bytes")
        newline = chunk.find(b"\n")
        if newline >= 0:
            chunks.append(chunk[:newline])
            # One request, one answer: nothing follows a line we wait for.
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise OverflowError(f"a line longer than {limit} bytes")


def write_all(fd: int, data: bytes, timeout: float | None = None) -> None:
    """Write all of ``data`` to ``fd``.

    A blocking descriptor is written to as is; with ``timeout`` the descriptor
    must be non-blocking and the write gives up after it.

    Raises:
        Deadline: the reader took nothing for ``timeout`` seconds.
        OSError: the pipe is broken.
    """
    view = memoryview(data)
    end = None if timeout is None else time.monotonic() + timeout
    poller = None
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            if end is None:
                raise
            left = end - time.monotonic()
            if left <= 0:
                raise Deadline("the reader took nothing") from None
            if poller is None:
                poller = select.poll()
                poller.register(fd, select.POLLOUT)
            poller.poll(min(left, 0.05) * 1000)


def drain(fd: int) -> None:
    """Throw away whatever is buffered in a non-blocking pipe's read end."""
    with contextlib.suppress(BlockingIOError, OSError):
        while os.read(fd, 1 << 16):
            pass


def close_all_but(keep: set[int]) -> None:
    """Close every descriptor of this process but ``keep`` and 0, 1, 2: a forked
    child must not hold the pipes of its siblings or of the host."""
    kept = sorted({0, 1, 2} | keep)
    start = 0
    for fd in kept:
        if fd > start:
            os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, os.sysconf("SC_OPEN_MAX"))


_LIBC: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    """The C library, loaded once per process (a forked child inherits it)."""
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def _prctl(option: int, value: int) -> None:
    if libc().prctl(option, value, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}) failed: {os.strerror(err)}")


def die_with_parent(parent: int) -> None:
    """Get SIGKILL when the parent dies (and die now if it already has): no
    process of an executor outlives the one that started it."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def become_subreaper() -> None:
    """Orphaned descendants are re-parented to this process, so ``waitpid`` sees
    every process that code run here started, however it forked."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def process_gone(pid: int) -> bool:
    """Whether ``pid`` no longer exists (reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def kill_group(pid: int, timeout: float = 2.0) -> None:
    """SIGKILL the process group ``pid`` leads (``pid`` alone while it leads
    none: a child not yet given work) and wait until ``pid`` is gone."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    except PermissionError:
        pass
    end = time.monotonic() + timeout
    while not process_gone(pid) and time.monotonic() < end:
        time.sleep(0.002)


def signal_name(status: int) -> str:
    """``waitpid`` status in words (``killed by SIGSEGV``, ``exited with status 3``)."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"killed by {signal.Signals(number).name}"
        except ValueError:
            return f"killed by signal {number}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"
