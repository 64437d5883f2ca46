"""The executors of one pool: started lazily, lent to one caller at a time,
replaced when they die.

Executors are started from one long-lived thread because bubblewrap's
``--die-with-parent`` (and the kernel's parent-death signal under it) follows
the *thread* that started the process: an executor started from a short-lived
pool thread would die with that thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from queue import SimpleQueue
from typing import TypeVar

from ._bytecode import bytecode_ready
from ._cooperative import ExecutorBusy, current_wait
from ._errors import SandboxError, SandboxUnavailable
from ._identity import ENV_UID, Separation, executor_identity, sandbox_uid
from ._process import ExecutorProcess
from ._settings import SandboxSettings

__all__ = ["AFFINITY_WAIT", "PROCESS_AFFINITY_WAIT", "WarmExecutors"]

_T = TypeVar("_T")

#: Seconds a call waits for the busy executor that compiled its template before
#: taking another idle one (which then compiles it too: a compile costs several
#: calls).
AFFINITY_WAIT = 0.05

#: The same wait when each template has processes of its own
#: (``fresh_state`` ``template`` or ``call``): there another executor would
#: fork and fill a whole template process (a fork, its copied pages, the
#: compile: several times a compile alone), and keep it beside the first. A
#: backlog of units that wait for their model calls (a local run) would
#: otherwise spread each question over both executors.
PROCESS_AFFINITY_WAIT = 2.0


class _Spawner:
    """One daemon thread that starts every executor of the process."""

    def __init__(self) -> None:
        self._queue: SimpleQueue[tuple[SandboxSettings, Future[ExecutorProcess]]] = SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="verifleet-sandbox", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            settings, future = self._queue.get()
            try:
                future.set_result(ExecutorProcess(settings))
            except BaseException as exc:
                future.set_exception(exc)

    def start(self, settings: SandboxSettings) -> ExecutorProcess:
        future: Future[ExecutorProcess] = Future()
        self._queue.put((settings, future))
        return future.result()


_spawner: _Spawner | None = None
_spawner_lock = threading.Lock()


def _start_executor(settings: SandboxSettings) -> ExecutorProcess:
    global _spawner
    if settings.bytecode_dir is not None and not bytecode_ready(settings.bytecode_dir):
        settings = settings.model_copy(update={"bytecode_dir": None})
    with _spawner_lock:
        if _spawner is None:
            _spawner = _Spawner()
        spawner = _spawner
    return spawner.start(settings)


class WarmExecutors:
    """At most ``settings.pool_size`` executors, each lent to one caller at a
    time (:meth:`acquire`, :meth:`release`). Thread-safe.

    Attributes:
        settings: What every executor is started with.
    """

    def __init__(self, settings: SandboxSettings) -> None:
        self.settings = settings
        self._cond = threading.Condition()
        self._idle: list[ExecutorProcess] = []
        self._running = 0
        self._closed = False
        self._replacements = 0
        self._busy: set[ExecutorProcess] = set()
        self._affinity_waiters = 0

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def acquire(self, template_id: str | None = None) -> ExecutorProcess:
        """An executor for one call: an idle one that already compiled
        ``template_id`` (a source digest); else, while a busy one knows it, that one once it is
        free (for at most :data:`AFFINITY_WAIT` seconds, or
        :data:`PROCESS_AFFINITY_WAIT` with a process per template: a compile costs several
        times a call); else any idle one, a new one while below ``pool_size``,
        or the next to be free. Inside ``cooperative``, only an idle one.

        Raises:
            SandboxError: The pool is closed.
            SandboxUnavailable: A new executor was needed and cannot be started,
                or it started without the seccomp filter its mode requires.
            ExecutorBusy: Inside ``cooperative``, getting one would mean waiting
                (or starting one).
        """
        if current_wait() is not None:
            return self._acquire_idle(template_id)
        give_up_affinity = time.monotonic() + self._affinity_wait()
        with self._cond:
            while True:
                if self._closed:
                    raise SandboxError("the sandbox pool is closed")
                index, known = self._preferred(template_id)
                if not known and self._busy_knows(template_id):
                    left = give_up_affinity - time.monotonic()
                    if left > 0:
                        self._affinity_waiters += 1
                        try:
                            self._cond.wait(timeout=left)
                        finally:
                            self._affinity_waiters -= 1
                        continue
                if index >= 0:
                    proc = self._idle.pop(index)
                    if proc.alive():
                        self._busy.add(proc)
                        return proc
                    self._running -= 1
                    self._replacements += 1
                    continue
                if self._running < self.settings.pool_size:
                    self._running += 1
                    break
                self._cond.wait()
        try:
            proc = _start_executor(self.settings)
            self._check_layers(proc)
        except BaseException:
            with self._cond:
                self._running -= 1
                # every waiter: one in started() tries a start of its own now
                self._cond.notify_all()
            raise
        with self._cond:
            self._busy.add(proc)
            self._cond.notify_all()  # started() waits for this
        return proc

    def started(self) -> None:
        """Return once an executor of this pool has started: at once when one
        is idle or lent, after the start under way when one is starting, else
        after starting one (and keeping it idle).

        A caller that only needs to know the isolation works (``verifleet run``
        asks again when its units begin, while the executor it started in the
        background may still be starting) must not queue a second start: every
        executor starts from one thread, so it would wait for both starts.

        Raises:
            SandboxError: The pool is closed.
            SandboxUnavailable: No executor can be started (the start under
                way failed and this one's failed too).
        """
        with self._cond:
            while True:
                if self._closed:
                    raise SandboxError("the sandbox pool is closed")
                if self._idle or self._busy:
                    return
                if self._running == 0:
                    break
                self._cond.wait()
        self.release(self.acquire())

    def _affinity_wait(self) -> float:
        """Seconds a call waits for the busy executor that compiled its template."""
        if self.settings.fresh_state == "job":
            return AFFINITY_WAIT
        return max(AFFINITY_WAIT, PROCESS_AFFINITY_WAIT)

    def _acquire_idle(self, template_id: str | None) -> ExecutorProcess:
        """:meth:`acquire` inside ``cooperative``: an idle, live executor that
        knows ``template_id`` (any idle one when no busy one knows it).

        Raises:
            ExecutorBusy: Getting one would mean waiting (or starting one).
        """
        with self._cond:
            if self._closed:
                raise SandboxError("the sandbox pool is closed")
            index, known = self._preferred(template_id)
            busy_knows = not known and self._busy_knows(template_id)
            if index < 0 or busy_knows or not self._idle[index].alive():
                raise ExecutorBusy
            proc = self._idle.pop(index)
            self._busy.add(proc)
            return proc

    def _busy_knows(self, template_id: str | None) -> bool:
        """Whether a busy executor compiled ``template_id``; the caller holds ``_cond``."""
        return template_id is not None and any(template_id in p.known_templates for p in self._busy)

    def _preferred(self, template_id: str | None) -> tuple[int, bool]:
        """(index in the idle list of the executor to hand out, whether it knows
        ``template_id``); index -1 when none is idle. The caller holds ``_cond``."""
        if template_id is not None:
            for index in range(len(self._idle) - 1, -1, -1):
                if template_id in self._idle[index].known_templates:
                    return index, True
        return len(self._idle) - 1, False

    def _check_layers(self, proc: ExecutorProcess) -> None:
        if self.settings.mode.uses_seccomp and not proc.seccomp:
            proc.kill()
            raise SandboxUnavailable("the executor started without its seccomp filter")
        identity = executor_identity(self.settings.mode)
        expected = sandbox_uid() if identity.separation is not Separation.NONE else None
        if expected is not None and proc.uid != expected:
            proc.kill()
            raise SandboxUnavailable(
                f"the executor runs as uid {proc.uid}, not as {ENV_UID}={expected}"
            )

    def release(self, proc: ExecutorProcess) -> None:
        """Take back an executor :meth:`acquire` lent: kept idle while it lives
        and the pool is open, else killed and counted as replaced."""
        with self._cond:
            self._busy.discard(proc)
            if proc.alive() and not self._closed:
                self._idle.append(proc)
            else:
                proc.kill()
                self._running -= 1
                self._replacements += 1
            # A waiter held back for affinity may not want this executor: wake
            # them all then, so the one that does is among them.
            if self._affinity_waiters:
                self._cond.notify_all()
            else:
                self._cond.notify()

    def on_each_idle(self, call: Callable[[ExecutorProcess], _T]) -> list[_T]:
        """``call`` on every executor idle now (each lent for it, then taken
        back), in turn; what each returned.

        Raises:
            Whatever ``call`` raised (the executors are taken back first).
        """
        with self._cond:
            lent, self._idle = self._idle, []
            self._busy.update(lent)
        values: list[_T] = []
        try:
            for proc in lent:
                values.append(call(proc))
        finally:
            for proc in lent:
                self.release(proc)
        return values

    def counts(self) -> tuple[int, int]:
        """(executors running or starting now, executors that died and were dropped)."""
        with self._cond:
            return self._running, self._replacements

    def close(self) -> None:
        """Kill every idle executor, and each lent one as it comes back; later
        :meth:`acquire` calls raise :class:`SandboxError`."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._cond.notify_all()
        for proc in idle:
            proc.kill()
