"""Host side of one executor process: start it, send a request, read the answer
within the wall-clock limit, kill it when it overruns or misbehaves.

Only JSON crosses the pipes, one object per line. The executor's stderr is
drained by a thread that keeps its last few KiB, so a crash ("Fatal Python
error", a seccomp refusal) can be named in the error.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import threading
import time
from collections import deque
from typing import Any

from ._errors import ExecutorCrashed, SandboxUnavailable
from ._launch import executor_command
from ._settings import SandboxSettings

__all__ = ["ExecutorProcess"]

#: Largest answer line accepted from an executor; a bigger one kills it.
MAX_ANSWER_BYTES = 32 * 1024 * 1024

#: Seconds an executor may take to start (interpreter, imports, warm-up).
START_TIMEOUT = 60.0


class ExecutorProcess:
    """One running executor. Not thread-safe: the pool hands it to one caller at a time.

    Attributes:
        known_templates: Template ids whose source this executor already holds.
        seccomp: Whether the executor reported its seccomp filter installed.
    """

    def __init__(self, settings: SandboxSettings) -> None:
        self._settings = settings
        self.known_templates: set[str] = set()
        self._next_id = 0
        self._buffer = b""
        self._stderr_tail: deque[bytes] = deque(maxlen=32)
        try:
            argv = executor_command(settings)
        except FileNotFoundError as exc:
            raise SandboxUnavailable(str(exc)) from None
        self._proc = subprocess.Popen(
            argv,
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
        self._drain = threading.Thread(target=self._drain_stderr, daemon=True)
        self._drain.start()
        try:
            hello = self._read(START_TIMEOUT)
        except ExecutorCrashed as exc:
            self.kill()
            raise SandboxUnavailable(f"the sandbox executor did not start: {exc}") from None
        if "fatal" in hello:
            self.kill()
            raise SandboxUnavailable(f"the sandbox executor refused to start: {hello['fatal']}")
        self.seccomp = bool(hello.get("hello", {}).get("seccomp"))

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

    def _read(self, timeout: float) -> dict[str, Any]:
        stdout = self._proc.stdout
        assert stdout is not None
        fd = stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise ExecutorCrashed(
                    f"no answer within {timeout:g} s (wall-clock limit); the executor was killed"
                )
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self._proc.wait(timeout=5)
                raise self._death("the executor died")
            self._buffer += chunk
            if len(self._buffer) > MAX_ANSWER_BYTES:
                self.kill()
                raise ExecutorCrashed(
                    f"answer larger than {MAX_ANSWER_BYTES} bytes; the executor was killed"
                )
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            message = json.loads(line)
        except ValueError:
            self.kill()
            raise ExecutorCrashed("the executor sent something that is not JSON") from None
        if not isinstance(message, dict):
            self.kill()
            raise ExecutorCrashed("the executor sent JSON that is not an object")
        return message

    def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return the executor's answer object.

        Raises:
            ExecutorCrashed: The executor died, overran the wall-clock limit or
                answered nonsense; it is dead afterwards (the pool replaces it).
        """
        self._next_id += 1
        request_id = self._next_id
        data = json.dumps({"id": request_id, "op": op, **payload}, separators=(",", ":"))
        stdin = self._proc.stdin
        assert stdin is not None
        view = memoryview(data.encode("utf-8") + b"\n")
        try:
            while view:
                view = view[stdin.write(view) or 0 :]
        except (BrokenPipeError, OSError):
            self._proc.wait(timeout=5)
            raise self._death("sending the request failed") from None
        answer = self._read(self._settings.timeout)
        if answer.get("id") != request_id:
            self.kill()
            raise ExecutorCrashed("the executor answered another request")
        return answer
