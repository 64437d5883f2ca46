"""Running the synchronous pipeline on an event loop without a thread per unit.

The stages are plain functions that call models and the sandbox and wait for the
answer. A service that scores thousands of requests at once cannot give each one
a thread (the GIL and a thread's memory make that the bottleneck long before the
judge is), so :func:`run_bridged` runs a unit in a *greenlet* on the event loop's
thread: where the unit would block, the code that blocks (the direct HTTP
caller's sender, the retry sleep, a sandbox call) hands an awaitable to
:func:`wait_for`, which switches back to the coroutine that drives the greenlet;
the coroutine awaits it and switches back in with the outcome. Other requests run
meanwhile. Outside a bridge, everything here behaves as plain blocking code, so
the same stages serve the local runner, the Celery workers and the reward server.

Cancelling the driving coroutine (a client that went away, a deadline) throws
the cancellation into the greenlet at its current wait: it is a
``BaseException``, so no stage's ``except Exception`` holds it, the unit unwinds
and makes no further model call.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Hashable
from typing import Any, ParamSpec, TypeVar, cast

import anyio
import anyio.to_thread
import greenlet

from verifleet.errors import VerifleetError
from verifleet.sandbox import (
    ExecutorBusy,
    SandboxError,
    SandboxPool,
    TemplateEvaluation,
    TemplateHandle,
    cooperative,
    default_pool,
)

from ._fair import CALLER, FairShare

__all__ = [
    "BridgedSandbox",
    "bridged_sleep",
    "call_blocking",
    "in_bridge",
    "run_bridged",
    "sandbox_failure",
    "wait_for",
]

P = ParamSpec("P")
T = TypeVar("T")


class _Bridged(greenlet.greenlet):
    """The greenlet of one bridged call (the marker :func:`in_bridge` looks for)."""


def in_bridge() -> bool:
    """Whether the caller runs inside :func:`run_bridged` (and may :func:`wait_for`)."""
    return isinstance(greenlet.getcurrent(), _Bridged)


def wait_for(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` on the event loop from bridged code; return its result.

    Raises:
        RuntimeError: called outside :func:`run_bridged`.
        BaseException: whatever awaiting raises, cancellation included.
    """
    current = greenlet.getcurrent()
    if not isinstance(current, _Bridged):
        if isinstance(awaitable, Coroutine):
            awaitable.close()  # never to be awaited: no "never awaited" warning
        raise RuntimeError("wait_for() needs a bridged call (run_bridged)")
    return cast(T, current.parent.switch(awaitable))


async def run_bridged(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """Run the blocking ``fn(*args, **kwargs)`` on this event loop's thread,
    awaiting whatever it hands to :func:`wait_for` meanwhile.

    ``fn`` must not block otherwise (no ``time.sleep``, no blocking socket): the
    loop stops while it does. Its CPU time is the loop's.

    Raises:
        BaseException: what ``fn`` raises; a cancellation of this coroutine is
            thrown into ``fn`` at its current wait and re-raised here once it
            has unwound.
    """
    caller = CALLER.get()

    def call() -> T:
        # A greenlet starts with an empty context: the request's caller is
        # carried in, so the executors it asks for are counted against it.
        if caller is not None:
            CALLER.set(caller)
        return fn(*args, **kwargs)

    glet = _Bridged(call, parent=greenlet.getcurrent())
    step: Any = glet.switch()
    while not glet.dead:
        try:
            value = await step
        except BaseException:
            step = glet.throw(*sys.exc_info())
        else:
            step = glet.switch(value)
    return cast(T, step)


def bridged_sleep(seconds: float) -> None:
    """``time.sleep`` that lets the loop run when called from bridged code."""
    if in_bridge():
        wait_for(anyio.sleep(seconds))
    else:
        time.sleep(seconds)


def call_blocking(fn: Callable[[], T], *, limiter: anyio.CapacityLimiter | None = None) -> T:
    """Call blocking ``fn`` (a pipe to a sandbox executor, a lock): in a worker
    thread when called from bridged code, so the loop goes on; directly otherwise.

    Args:
        fn: The call.
        limiter: Threads it may occupy at once (anyio's default pool of 40 when
            None); calls beyond wait on the loop, not in a thread.

    A cancellation while it runs waits for ``fn`` to return, then is raised.
    """
    if not in_bridge():
        return fn()
    return wait_for(anyio.to_thread.run_sync(fn, limiter=limiter))


def sandbox_failure(exc: BaseException) -> Exception | None:
    """The sandbox's own failure behind ``exc``, or None when ``exc`` is about the
    code it ran (a refused template, a trait that raised).

    The sandbox's own failures: its errors (an executor that could not start,
    died or overran its limit: :class:`~verifleet.sandbox.SandboxError`, which
    the pool reports as the template's or trait's error with the executor's
    failure attached as the context) and anything that is no verifleet error at
    all (an ``OSError`` on a pipe, a ``ValueError`` from ``select()``): a bug or
    the machine, never a verdict on the code.
    """
    if not isinstance(exc, Exception):
        return None  # a cancellation or an exit: not a failure of the sandbox
    if not isinstance(exc, VerifleetError):
        return exc
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 4:
        if isinstance(current, SandboxError):
            return current
        current = current.__cause__ or current.__context__
        seen += 1
    return None


async def _readable(fd: int, timeout: float) -> tuple[bool, BaseException | None]:
    """(True once ``fd`` is readable, False after ``timeout`` s; the cancellation
    that came meanwhile). A cancellation does not end the wait: the executor's
    reply is on its way, and an executor left with an unread reply is lost."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[bool] = loop.create_future()

    def settle(value: bool) -> None:
        if not ready.done():
            ready.set_result(value)

    loop.add_reader(fd, settle, True)
    timer = loop.call_later(max(timeout, 0.0), settle, False)
    cancelled: BaseException | None = None
    try:
        while True:
            try:
                return await asyncio.shield(ready), cancelled
            except asyncio.CancelledError as exc:
                cancelled = exc
    finally:
        timer.cancel()
        loop.remove_reader(fd)


class _ReplyWait:
    """The :data:`~verifleet.sandbox.ReadWait` of one bridged sandbox call: the
    greenlet waits on the loop; a cancellation is kept for after the reply."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled: BaseException | None = None

    def __call__(self, fd: int, timeout: float) -> bool:
        ready, cancelled = wait_for(_readable(fd, timeout))
        if self.cancelled is None:
            self.cancelled = cancelled
        return ready


class _LoopSlots:
    """How many of the pool's executors one loop's bridged calls hold at once
    (its size): a call beyond waits on the loop for one to be given back, so it
    finds an executor idle rather than going to a thread to wait for one.

    Shared fairly between the callers of the bridged work (:data:`CALLER`,
    :class:`FairShare`): one caller's slow templates hold at most its share of
    the executors while another caller is active, and a freed executor goes to
    the callers waiting round-robin, not to the first of one caller's queue.
    """

    __slots__ = ("share",)

    def __init__(self, size: int) -> None:
        self.share = FairShare(size)

    def take(self, caller: Hashable | None) -> None:
        """Take a slot for ``caller``, waiting on the loop (from bridged code)
        while none is free to it."""
        if self.share.try_take(caller):
            return
        turn = self.share.join(caller)
        try:
            wait_for(turn)
        except BaseException:
            self.share.abandon(caller, turn)  # gives back a slot handed meanwhile
            raise

    def give(self, caller: Hashable | None) -> None:
        """Give ``caller``'s slot back; a waiting caller is handed it."""
        self.share.give(caller)


class BridgedSandbox:
    """A :class:`~verifleet.sandbox.SandboxPool` whose calls, from bridged code,
    let the event loop go on: sent to an idle executor from the loop's thread,
    the reply awaited on the loop (:func:`~verifleet.sandbox.cooperative`); in a
    worker thread when that would mean waiting for an executor (an executor
    call blocks on its pipe). Outside a bridge they are the pool's own calls.

    Set it as ``PipelineResources.sandbox`` (it has the pool's interface; what
    it does not wrap is the pool's own attribute).

    Args:
        pool: The pool to wrap (the process-wide one when None).
        on_failure: Called with the sandbox's own failure
            (:func:`sandbox_failure`) before a call that failed because of it
            raises, so the caller can tell an executor failure from a verdict.
    """

    def __init__(
        self,
        pool: SandboxPool | None = None,
        on_failure: Callable[[Exception], None] | None = None,
    ) -> None:
        self.pool = pool if pool is not None else default_pool()
        self.on_failure = on_failure
        self._limiters: dict[int, anyio.CapacityLimiter] = {}
        self._loop_slots: dict[int, _LoopSlots] = {}

    def _limiter(self) -> anyio.CapacityLimiter:
        # One thread per executor: more would only wait in the pool for one, and
        # dozens of threads taking turns there cost more CPU than the calls.
        # (A limiter belongs to one event loop: one per loop.)
        loop = id(asyncio.get_running_loop())
        limiter = self._limiters.get(loop)
        if limiter is None:
            limiter = self._limiters[loop] = anyio.CapacityLimiter(self.pool.settings.pool_size)
        return limiter

    def _slots(self) -> _LoopSlots:
        loop = id(asyncio.get_running_loop())
        slots = self._loop_slots.get(loop)
        if slots is None:
            slots = self._loop_slots[loop] = _LoopSlots(self.pool.settings.pool_size)
        return slots

    def _call(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            if not in_bridge():
                return fn(*args, **kwargs)
            # The slot is held for the threaded call too: a call that went to
            # a thread without one waited in the pool beside the fair queue,
            # and another caller's queued call took the executor it was after.
            slots = self._slots()
            caller = CALLER.get()
            slots.take(caller)
            try:
                done, outcome = self._on_loop(fn, *args, **kwargs)
                if done:
                    return cast(T, outcome)
                # The thread runs in the bridged code's context, not the loop
                # task's: the pool reads its scope (SandboxPool.scoped, set by
                # the caller in its greenlet) there. Without it a served
                # benchmark's templates ran unscoped, a process and a compile
                # per call.
                context = contextvars.copy_context()
                return call_blocking(
                    lambda: context.run(fn, *args, **kwargs), limiter=self._limiter()
                )
            finally:
                slots.give(caller)
        except Exception as exc:
            failure = sandbox_failure(exc)
            if failure is not None and self.on_failure is not None:
                self.on_failure(failure)
            raise

    def _on_loop(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> tuple[bool, T | None]:
        """Make the call on this thread (which holds a slot), its reply awaited
        on the loop: (True, its outcome); (False, None) when it needs an
        executor that is not idle (nothing was sent). A cancellation meanwhile
        is raised once the reply is in, as the threaded call does: the
        executor stays usable."""
        waiter = _ReplyWait()
        try:
            with cooperative(waiter):
                outcome = fn(*args, **kwargs)
        except ExecutorBusy:
            return False, None
        except BaseException:
            if waiter.cancelled is not None:
                raise waiter.cancelled from None
            raise
        if waiter.cancelled is not None:
            raise waiter.cancelled
        return True, outcome

    def load_template(self, source: str, question_id: str) -> TemplateHandle:
        """:meth:`SandboxPool.load_template`; a template described before costs no hop."""
        # ``knows`` takes the source (it was handed the MD5 template id, which
        # is never a known source: every load hopped to a thread).
        if self.pool.knows(source):
            return self.pool.load_template(source, question_id)
        return self._call(self.pool.load_template, source, question_id)

    def evaluate(
        self, handle: TemplateHandle, judge_output: dict[str, Any], raw_trace: str
    ) -> TemplateEvaluation:
        """:meth:`SandboxPool.evaluate` (raises as it does)."""
        return self._call(self.pool.evaluate, handle, judge_output, raw_trace)

    def validate_template(self, source: str, *, question_id: str | None = None) -> None:
        """:meth:`SandboxPool.validate_template` (raises as it does)."""
        self.load_template(source, question_id or "")

    def check_trait(self, trait: dict[str, Any]) -> None:
        """:meth:`SandboxPool.check_trait` (raises as it does)."""
        self._call(self.pool.check_trait, trait)

    def run_trait(self, trait: dict[str, Any], text: str) -> Any:
        """:meth:`SandboxPool.run_trait` (raises as it does)."""
        return self._call(self.pool.run_trait, trait, text)

    def run_regex_trait(self, trait: dict[str, Any], text: str) -> bool:
        """:meth:`SandboxPool.run_regex_trait` (raises as it does)."""
        return self._call(self.pool.run_regex_trait, trait, text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)

    def as_pool(self) -> SandboxPool:
        """This object typed as the pool it stands for."""
        return cast(SandboxPool, self)
