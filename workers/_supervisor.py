"""``verifleet worker``'s supervisor: it runs the Celery worker as a child process
and replaces it when it dies or stops answering (docs/fleet.md, "Start workers").

The child writes one byte to a pipe every :data:`BEAT_INTERVAL` seconds from a
thread of its own; a child silent for ``stuck_after`` seconds (a thread stuck in
C code holding the GIL stops its heartbeats too) is killed with SIGKILL (a frozen
interpreter runs no signal handler) and started again, as is one that died of a
signal. Its heartbeat in Redis is deleted at once, so the fleet's reaper requeues
its units without waiting for it to expire; the unit that froze or killed it
counts a try each time (:mod:`verifleet.workers._quarantine`).

A child that exits unasked after it wrote :data:`READY` (:func:`announce_ready`)
is restarted whatever its status (a stray SIGTERM exits 0); one that exits before
(a start-up error) is not: the supervisor exits with its status. Restarts sooner
than 30 s after the previous start wait 1, 2, 4... up to 30 s. SIGTERM and SIGINT
are passed on to the child, whose warm shutdown lets running units finish.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from types import FrameType

__all__ = [
    "BEAT_FD_ENV",
    "BEAT_INTERVAL",
    "OWNER_ENV",
    "READY",
    "Supervisor",
    "announce_ready",
    "start_beating",
    "supervised_owner_id",
]

log = logging.getLogger("verifleet.supervisor")

#: The environment variable that tells a worker process it is supervised: the
#: number of the pipe's write end it inherited.
BEAT_FD_ENV = "VERIFLEET_SUPERVISOR_FD"

#: The environment variable with the owner id the supervisor chose for the
#: child (its name in Redis liveness records), so that the supervisor can clear
#: its heartbeat when it kills it.
OWNER_ENV = "VERIFLEET_OWNER_ID"

#: Seconds between two beats of a supervised worker process.
BEAT_INTERVAL = 1.0

#: What a supervised worker process writes to the pipe once it consumes tasks
#: (a beat is ``b"."``).
READY = b"!"

#: The pipe's write end in a supervised worker process (set by start_beating).
_beat_fd: int | None = None

#: Restarts in a row sooner than this after the previous start wait before the next.
_QUICK_RESTART = 30.0


def supervised_owner_id() -> str | None:
    """The owner id chosen by this process's supervisor, if it has one."""
    return os.environ.get(OWNER_ENV) or None


def start_beating() -> bool:
    """In a supervised worker process, start the thread that beats to the
    supervisor; returns False (and does nothing) when the process is not supervised.

    The thread does nothing else, so only an interpreter that runs no Python
    thread at all (or a dead process) stops the beats. A supervisor that is gone
    (a closed pipe) stops the thread, not the worker.
    """
    raw = os.environ.get(BEAT_FD_ENV)
    if not raw:
        return False
    global _beat_fd
    fd = int(raw)
    os.set_inheritable(fd, False)  # not into the sandbox executors
    del os.environ[BEAT_FD_ENV]  # nor the variable
    _beat_fd = fd

    def beat() -> None:
        while True:
            try:
                os.write(fd, b".")
            except OSError:
                return
            time.sleep(BEAT_INTERVAL)

    threading.Thread(target=beat, name="verifleet-supervisor-beat", daemon=True).start()
    return True


def announce_ready() -> None:
    """Tell the supervisor (if any) that this worker process is ready: from now
    on, any exit it was not asked for gets it restarted. Errors are ignored (a
    supervisor that is gone restarts nothing anyway)."""
    if _beat_fd is None:
        return
    with contextlib.suppress(OSError):
        os.write(_beat_fd, READY)


class Supervisor:
    """Runs ``command`` (a worker process) and replaces it when it stops
    beating for ``stuck_after`` seconds, or ends (of a signal or not) after it
    was ready without the supervisor having been told to stop.

    Args:
        command: The child's command line.
        env: The child's environment (the beat pipe and owner id are added).
        stuck_after: Seconds without a beat after which the child is killed.
        forget_owner: Called with the owner id of a child that was killed or
            died, to clear its heartbeat in Redis (errors are logged, not raised).
    """

    def __init__(
        self,
        command: Sequence[str],
        env: Mapping[str, str],
        *,
        stuck_after: float,
        forget_owner: Callable[[str], None] | None = None,
    ) -> None:
        self.command = list(command)
        self.env = dict(env)
        self.stuck_after = stuck_after
        self.forget_owner = forget_owner
        self.replaced = 0
        self._stopping: int | None = None
        self._child: subprocess.Popen[bytes] | None = None

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self._stopping = signum
        child = self._child
        # SIGINT from a terminal reaches the child too (same process group);
        # passing it on as well would turn its warm shutdown into a cold one.
        if signum == signal.SIGTERM and child is not None and child.poll() is None:
            child.send_signal(signum)

    def run(self) -> int:
        """Supervise until the child exits on its own or the supervisor is told
        to stop; returns the exit status to end with."""
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            return self._supervise()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _supervise(self) -> int:
        last_start: float | None = None
        quick = 0
        while True:
            if last_start is not None and time.monotonic() - last_start < _QUICK_RESTART:
                quick += 1
                time.sleep(min(2.0 ** (quick - 1), 30.0))
                if self._stopping is not None:
                    return 128 + self._stopping
            else:
                quick = 0
            last_start = time.monotonic()
            status, restart = self._run_once()
            if not restart or self._stopping is not None:
                return status
            self.replaced += 1

    def _run_once(self) -> tuple[int, bool]:
        """Run one child to its end: (its exit status, whether to start another)."""
        read_fd, write_fd = os.pipe()
        owner = f"{os.uname().nodename}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        env = dict(self.env, **{BEAT_FD_ENV: str(write_fd), OWNER_ENV: owner})
        child = subprocess.Popen(self.command, env=env, pass_fds=(write_fd,))
        self._child = child
        os.close(write_fd)
        log.warning("worker process %d started", child.pid)
        beating = False
        was_ready = False
        last_beat = time.monotonic()
        killed_stuck = False
        try:
            while child.poll() is None:
                readable, _, _ = select.select([read_fd], [], [], 0.5)
                if readable:
                    data = os.read(read_fd, 4096)
                    if not data:
                        # Write end closed: the child is exiting; wait for it.
                        child.wait()
                        break
                    beating = True
                    was_ready = was_ready or READY in data
                    last_beat = time.monotonic()
                    continue
                silent = time.monotonic() - last_beat
                if beating and silent > self.stuck_after:
                    log.warning(
                        "worker process %d sent no heartbeat for %.0f s "
                        "(stuck in host code); killed and replaced, its units go back to the "
                        "queue",
                        child.pid,
                        silent,
                    )
                    child.kill()
                    child.wait()
                    killed_stuck = True
        finally:
            os.close(read_fd)
            self._child = None
        status = child.returncode
        unasked = not killed_stuck and self._stopping is None
        died_of_signal = status < 0 and unasked
        # Exited on its own after it was ready: a stray SIGTERM's warm shutdown
        # (status 0), a fatal error at run time. Only a start-up failure (never
        # ready) ends the supervisor, since starting again would fail again.
        exited = status >= 0 and unasked and was_ready
        if died_of_signal:
            log.warning(
                "worker process %d was killed by signal %d; replaced, "
                "its units go back to the queue",
                child.pid,
                -status,
            )
        elif exited:
            log.warning(
                "worker process %d exited with status %d without being asked to; "
                "replaced, its units go back to the queue",
                child.pid,
                status,
            )
        restart = killed_stuck or died_of_signal or exited
        if restart:
            self._forget(owner)
        return (128 - status if status < 0 else status), restart

    def _forget(self, owner: str) -> None:
        if self.forget_owner is None:
            return
        try:
            self.forget_owner(owner)
        except Exception as exc:  # Redis down: the heartbeat then expires on its own
            log.warning("could not clear the old heartbeat (%s)", exc)
