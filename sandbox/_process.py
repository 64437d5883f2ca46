"""Host side of one executor process: start it, send a request, read the answer
within the wall-clock limit, kill it when it overruns or misbehaves.

Only protocol messages cross the pipes (``_protocol``), one JSON object per
line. The executor enforces each call's wall clock itself (it kills the call's
process and answers ``timeout``); the host's own limit is the last line, for an
executor that stopped answering at all. The executor's stderr is drained by a
thread that keeps its last few KiB, so a crash ("Fatal Python error", a seccomp
refusal) can be named in the error. Pipes are watched with ``poll``: a host
with more than 1,023 open descriptors (a busy reward server) works as any other.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections import deque

from pydantic import BaseModel, ValidationError

from ._children import MAX_ANSWER_BYTES
from ._cooperative import ReadWait
from ._errors import ExecutorCrashed, SandboxUnavailable
from ._identity import executor_identity
from ._launch import executor_command
from ._pipes import Deadline, read_line, write_all
from ._protocol import Hello, Reply, decode_reply, encode
from ._settings import SandboxSettings

__all__ = ["ExecutorProcess"]

#: Seconds an executor may take to start (interpreter, imports, warm-up).
START_TIMEOUT = 60.0


class ExecutorProcess:
    """One running executor. Not thread-safe: the pool hands it to one caller at a time.

    Attributes:
        known_templates: Source digests (SHA-256) whose source this executor already holds.
        seccomp: Whether the executor reported its seccomp filter installed.
        uid: The uid the executor reported running as (in its own user
            namespace, if it has one).
    """

    def __init__(self, settings: SandboxSettings) -> None:
        self._settings = settings
        self.known_templates: set[str] = set()
        self._next_id = 0
        self._stderr_tail: deque[bytes] = deque(maxlen=32)
        try:
            argv = executor_command(settings)
        except FileNotFoundError as exc:
            raise SandboxUnavailable(str(exc)) from None
        # seccomp mode: never the worker's own user (see _identity).
        identity = executor_identity(settings.mode)
        self._proc = subprocess.Popen(
            [*identity.prefix, *argv],
            user=identity.uid,
            group=identity.uid,
            extra_groups=None if identity.uid is None else [],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            close_fds=True,
            start_new_session=True,
            # No inherited environment (API keys), no meaningful working directory.
            env={"PATH": os.defpath, "PYTHONDONTWRITEBYTECODE": "1"},
            cwd="/",
        )
        try:
            assert self._proc.stdin is not None
            os.set_blocking(self._proc.stdin.fileno(), False)
            self._drain = threading.Thread(target=self._drain_stderr, daemon=True)
            self._drain.start()
            hello = self._hello()
        except BaseException:
            # Whatever failed (a thread that could not start, an interrupt), a
            # start that did not finish leaves no process behind.
            self.kill()
            raise
        self.seccomp = hello.seccomp
        self.uid = hello.uid

    def _hello(self) -> Hello:
        try:
            line = self._read(START_TIMEOUT)
            hello = Hello.model_validate_json(line)
        except ExecutorCrashed as exc:
            raise SandboxUnavailable(f"the sandbox executor did not start: {exc}") from None
        except ValidationError:
            raise SandboxUnavailable(
                "the sandbox executor said something else than hello"
            ) from None
        if hello.fatal is not None:
            raise SandboxUnavailable(f"the sandbox executor refused to start: {hello.fatal}")
        return hello

    @property
    def pid(self) -> int:
        """The process id of the started command (bwrap in strict mode)."""
        return self._proc.pid

    def alive(self) -> bool:
        """Whether the process is still running."""
        return self._proc.poll() is None

    def _drain_stderr(self) -> None:
        stream = self._proc.stderr
        assert stream is not None
        while True:
            chunk = stream.read(4096)
            if not chunk:
                return
            self._stderr_tail.append(chunk)

    def stderr_tail(self) -> str:
        """The last lines the executor wrote to stderr (for error messages)."""
        text = b"".join(self._stderr_tail).decode("utf-8", "replace").strip()
        lines = [line for line in text.splitlines() if line.strip()]
        return " | ".join(lines[-3:])[-500:]

    def kill(self) -> None:
        """Kill the executor's whole session (bwrap and everything inside) and reap it."""
        if self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=5)
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                stream.close()

    def _death(self, what: str) -> ExecutorCrashed:
        code = self._proc.poll()
        if code is not None and code < 0:
            try:
                cause = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                cause = f"killed by signal {-code}"
        elif code is not None:
            cause = f"exited with status {code}"
        else:
            cause = "stopped answering"
        tail = self.stderr_tail()
        return ExecutorCrashed(f"{what}: the executor {cause}" + (f" ({tail})" if tail else ""))

    def _read(self, timeout: float, wait: ReadWait | None = None) -> bytes:
        stdout = self._proc.stdout
        assert stdout is not None
        try:
            return read_line(stdout.fileno(), timeout, limit=MAX_ANSWER_BYTES, wait=wait)
        except Deadline:
            self.kill()
            raise ExecutorCrashed(
                f"no answer within {timeout:g} s (wall-clock limit); the executor was killed"
            ) from None
        except OverflowError:
            self.kill()
            raise ExecutorCrashed(
                f"answer larger than {MAX_ANSWER_BYTES} bytes; the executor was killed"
            ) from None
        except EOFError:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=5)
            raise self._death("the executor died") from None

    def call(self, request: BaseModel, *, wait: ReadWait | None = None) -> Reply:
        """Send one request (a ``_protocol`` request with a fresh ``id``, see
        :meth:`next_id`) and return the executor's reply.

        ``wait`` (see ``_cooperative``) waits for the reply instead of blocking
        this thread in ``poll``. The request is written at once: the executor
        is idle and reading, so only one larger than a pipe's buffer waits here.

        Raises:
            ExecutorCrashed: The executor died, stopped answering or answered
                nonsense; it is dead afterwards (the pool replaces it).
        """
        stdin = self._proc.stdin
        assert stdin is not None
        try:
            write_all(stdin.fileno(), encode(request), self._settings.host_timeout)
        except Deadline:
            self.kill()
            raise ExecutorCrashed("the executor took no request; it was killed") from None
        except OSError:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=5)
            raise self._death("sending the request failed") from None
        try:
            line = self._read(self._settings.host_timeout, wait)
        except BaseException:
            if wait is not None and self.alive():
                # Left mid-call: its reply may still come, and would be taken
                # for the next call's.
                self.kill()
            raise
        try:
            reply = decode_reply(line)
        except ValidationError:
            self.kill()
            raise ExecutorCrashed("the executor sent something that is not a reply") from None
        if reply.id != getattr(request, "id", None):
            self.kill()
            raise ExecutorCrashed("the executor answered another request")
        return reply

    def next_id(self) -> int:
        """A request id not used before on this executor."""
        self._next_id += 1
        return self._next_id
