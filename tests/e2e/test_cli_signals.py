"""SIGTERM and SIGINT stop every child process of a verifleet command (issue 21:
llama-server was left running, parent 1, port held): the bundled model's
llama-server and the sandbox's executors of ``verifleet run --answering local``,
and the llama-server of ``verifleet llm serve``. Real processes throughout (the
real llama-server with the bundled model); the signal goes to the verifleet
process alone, as ``kill`` sends it, not to its process group as a terminal's
Ctrl-C does."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import pytest
from _support.fleet import VERIFLEET
from _support.jobs import capitals_benchmark
from _support.processes import descendants, still_running

from verifleet.orchestrator._local.journal import journal_path
from verifleet.schemas import dump_benchmark

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

SIGNALS = [signal.SIGTERM, signal.SIGINT]

# The command as a user's shell starts it: with SIGINT at its default. A test run
# started in the background without job control (``nohup bash scripts/test.sh &``)
# ignores SIGINT, and an ignored signal stays ignored across fork and exec, so
# the command would never see the SIGINT these tests send. This launcher puts
# SIGINT back to its default and becomes the command (same process).
_AS_A_SHELL_STARTS_IT = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL);"
    " os.execv(sys.argv[1], sys.argv[1:])",
]
COMMAND = [*_AS_A_SHELL_STARTS_IT, *VERIFLEET]


def _stop(proc: subprocess.Popen[str], sig: signal.Signals) -> str:
    proc.send_signal(sig)
    try:
        return proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_run_with_the_local_model_stops_every_child_and_keeps_the_journal(
    sig: signal.Signals, tmp_path: Path
) -> None:
    bench, _answers = capitals_benchmark(60)
    path = tmp_path / "bench.yaml"
    dump_benchmark(bench, path)
    out = tmp_path / "out.parquet"
    journal = journal_path(out)
    args = ["run", str(path), "--answering", "local", "--parsing", "local", "--out", str(out)]
    proc = subprocess.Popen(
        [*COMMAND, *args, "--concurrency", "2", "--no-preflight"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 600
        while not (journal.exists() and journal.read_text().count("\n") >= 1):
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "no unit finished"
            time.sleep(0.2)
        started = descendants(proc.pid)
    except BaseException:
        proc.kill()
        raise
    commands = " | ".join(cmd for _pid, _start, cmd in started)
    assert any(_serves_the_model(cmd) for _pid, _start, cmd in started), commands
    assert "verifleet.sandbox._executor" in commands, commands
    stderr = _stop(proc, sig)
    assert proc.returncode == 128 + sig, stderr[-3000:]
    assert "interrupted" in stderr and "Traceback" not in stderr, stderr[-3000:]
    assert still_running(started) == []
    assert journal.read_text().count("\n") >= 1  # what was done is kept


def _serves_the_model(command: str) -> bool:
    """The local model's server process, whichever runtime serves it: the
    prebuilt one (a Python process around the xllamacpp wheel's server) or the
    compiled llama-server."""
    return "llama-server" in command or "_localllm.prebuilt_server" in command


def _read_lines(stream: IO[str] | None, into: queue.Queue[str]) -> None:
    for line in stream or ():
        into.put(line)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_llm_serve_stops_its_llama_server(sig: signal.Signals) -> None:
    # As a user's shell starts it: output into a pipe is block-buffered unless
    # the command flushes it.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen(
        [*COMMAND, "llm", "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True).start()
    try:
        # Printed as soon as the server answers, into a pipe, as a user's
        # `| tee` or `> log` gets it: the lines must not wait in a buffer
        # until the command ends.
        serving = lines.get(timeout=120)
        spec = lines.get(timeout=10)
        assert serving.startswith("serving ") and spec.startswith("model spec: "), serving + spec
        port = int(serving.rsplit(":", 1)[1].split("/", 1)[0])
        started = descendants(proc.pid)
    except BaseException:
        proc.kill()
        raise
    assert any(_serves_the_model(cmd) for _pid, _start, cmd in started), started
    proc.send_signal(sig)
    try:
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.stderr is not None
    assert proc.returncode == 0, proc.stderr.read()[-3000:]
    assert still_running(started) == []
    with socket.socket() as probe:  # the port is free again for a new server
        # as servers bind (llama-server too): connections the stopped server
        # closed may linger in TIME_WAIT, which holds no process and no port.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))
        probe.listen()
