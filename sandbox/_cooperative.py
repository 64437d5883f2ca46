"""Executor calls that wait without blocking their thread.

A reward server scores thousands of requests on one event loop; a sandbox call
there used to run in a worker thread because reading an executor's reply blocks.
The thread hop (a queue, a condition, a thread switch per call) was ~30 % of a
judge-free request's server CPU. Inside :func:`cooperative` the pool's calls wait
the way their caller says instead: ``wait(fd, timeout)`` returns once ``fd`` is
readable (True) or the timeout passed (False), letting the loop run meanwhile
(the bridge in ``verifleet.pipeline`` suspends its greenlet there). A call that
would have to wait for an executor (none idle, none started yet, or one that
knows the template is busy) raises :class:`ExecutorBusy` before it sends
anything, and the caller makes it the blocking way instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

from ._errors import ExecutorBusy

__all__ = ["ExecutorBusy", "ReadWait", "cooperative", "current_wait"]

#: ``wait(fd, timeout)``: True once ``fd`` is readable, False when ``timeout``
#: seconds passed first.
ReadWait = Callable[[int, float], bool]

_WAIT: ContextVar[ReadWait | None] = ContextVar("verifleet_sandbox_wait", default=None)


@contextlib.contextmanager
def cooperative(wait: ReadWait) -> Iterator[None]:
    """Within the block, the pool's calls in this context read replies with
    ``wait`` and raise :class:`ExecutorBusy` rather than wait for an executor."""
    token = _WAIT.set(wait)
    try:
        yield
    finally:
        _WAIT.reset(token)


def current_wait() -> ReadWait | None:
    """The ``wait`` of the enclosing :func:`cooperative` block, None outside one."""
    return _WAIT.get()
