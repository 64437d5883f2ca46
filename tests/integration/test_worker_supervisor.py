"""The supervisor of ``verifleet worker`` on real child processes (small Python
scripts standing in for the Celery worker: what is under test is how the
supervisor reads the beats, kills and restarts, not Celery)."""

from __future__ import annotations

import signal
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from verifleet.workers._supervisor import Supervisor

pytestmark = pytest.mark.integration

#: A child that counts its runs in a file, beats like a supervised worker and
#: says it is ready, then on its first runs freezes with the GIL held (as a
#: stuck unit would), kills itself (as the OOM killer would), or exits 0 as
#: Celery's warm shutdown does after a stray SIGTERM; on its last run it fails
#: before it is ready (status 3), as a start-up error would.
CHILD = textwrap.dedent(
    """
    import os, re, signal, sys, time
    from verifleet.workers._supervisor import announce_ready, start_beating

    runs = sys.argv[1]
    with open(runs, "a") as f:
        f.write(os.environ["VERIFLEET_OWNER_ID"] + "\\n")
    n = len(open(runs).read().splitlines())
    assert start_beating()
    assert "VERIFLEET_SUPERVISOR_FD" not in os.environ
    if n == 4:
        sys.exit(3)
    announce_ready()
    time.sleep(1.5)
    if n == 1:
        re.fullmatch(r"(a+)+", "a" * 64 + "!")
    if n == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    sys.exit(0)
    """
)


def test_a_frozen_killed_or_exiting_child_is_replaced_and_one_that_fails_at_start_is_not(
    tmp_path: Path,
) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    runs = tmp_path / "runs.txt"
    forgotten: list[str] = []
    supervisor = Supervisor(
        [sys.executable, str(script), str(runs)],
        {"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)},
        stuck_after=2.0,
        forget_owner=forgotten.append,
    )
    status = supervisor.run()
    owners = runs.read_text().splitlines()
    assert status == 3  # the fourth child failed before it was ready: the supervisor ends
    assert len(owners) == 4 and len(set(owners)) == 4
    # The third exited 0 (a warm shutdown nobody asked for): replaced like the others.
    assert supervisor.replaced == 3
    # The frozen, killed and exited children had their heartbeats cleared.
    assert forgotten == owners[:3]


def test_a_child_that_fails_at_start_is_not_restarted(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    code = f"open({str(runs)!r}, 'a').write('x'); raise SystemExit(2)"
    supervisor = Supervisor([sys.executable, "-c", code], {}, stuck_after=1.0)
    assert supervisor.run() == 2
    assert runs.read_text() == "x" and supervisor.replaced == 0


def test_a_child_frozen_while_stopping_is_killed_not_waited_for(tmp_path: Path) -> None:
    # The child handles SIGTERM in Python, as Celery does; frozen in a unit's
    # thread (which holds the GIL, so the main thread never runs the handler),
    # it never stops, so the stopping supervisor kills it once it is silent.
    code = textwrap.dedent(
        """
        import re, signal, sys, threading, time
        from verifleet.workers._supervisor import start_beating
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        start_beating()
        time.sleep(1.0)
        unit = threading.Thread(target=re.fullmatch, args=(r"(a+)+", "a" * 64 + "!"))
        unit.start()
        unit.join()
        """
    )
    forgotten: list[str] = []
    supervisor = Supervisor(
        [sys.executable, "-c", code],
        {"PYTHONPATH": ":".join(sys.path)},
        stuck_after=2.0,
        forget_owner=forgotten.append,
    )
    stop = threading.Timer(2.0, supervisor._on_signal, args=(signal.SIGTERM, None))
    stop.start()
    try:
        assert supervisor.run() == 128 + signal.SIGKILL
    finally:
        stop.cancel()
    assert supervisor.replaced == 0 and len(forgotten) == 1
