"""A finished ``verifleet run`` leaves without the interpreter's teardown
(``orchestrator.cli._leave``), but never before what ``atexit`` holds has run,
its output is flushed, and never while a thread that is not a daemon works."""

from __future__ import annotations

import subprocess
import sys

PRELUDE = """
import atexit, sys, threading, time
from verifleet.orchestrator.cli import _leave
atexit.register(lambda: print("atexit ran"))
# Buffered, as it is when stdout is a pipe: lost unless _leave flushes it.
sys.stdout.write("before leaving\\n")
"""


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PRELUDE + code], capture_output=True, text=True, timeout=60
    )


def test_leave_runs_atexit_flushes_and_exits_with_the_code() -> None:
    done = _python("_leave(3)\nprint('after leave')")
    assert done.returncode == 3, done.stderr
    assert done.stdout.splitlines() == ["before leaving", "atexit ran"]


def test_leave_returns_while_a_non_daemon_thread_works() -> None:
    # Control for the test above: the interpreter joins the thread and exits 0.
    code = (
        "t = threading.Thread(target=lambda: (time.sleep(0.3), print('thread done', flush=True)))\n"
        "t.start()\n_leave(3)\nprint('after leave', flush=True)"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "before leaving",
        "after leave",
        "thread done",
        "atexit ran",
    ]
