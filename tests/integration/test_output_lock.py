"""The ``--out`` lock: one run per output file, released however the run ends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from verifleet.orchestrator._local.lock import OutputLock, check_output, lock_path
from verifleet.schemas import ConfigError, ExportError

pytestmark = pytest.mark.integration

_HOLD = """
import sys, time
from pathlib import Path
from verifleet.orchestrator._local.lock import OutputLock
lock = OutputLock(Path(sys.argv[1]))
lock.acquire()
print("locked", flush=True)
time.sleep(600)
"""


def test_a_second_lock_is_refused_naming_the_holder(tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    with OutputLock(out), pytest.raises(ConfigError, match=f"pid {os.getpid()}"):
        OutputLock(out).acquire()
    assert not lock_path(out).exists()  # removed on release
    with OutputLock(out):  # and free again
        assert lock_path(out).exists()


def test_a_killed_holder_does_not_block_the_next_run(tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(out)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(ConfigError, match=f"pid {holder.pid}"):
            OutputLock(out).acquire()
    finally:
        holder.kill()
        holder.wait()
    with OutputLock(out):
        pass


def test_the_output_is_checked_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"'\.xlsx'"):
        check_output(tmp_path / "results.xlsx")
    with pytest.raises(ConfigError, match="is a folder"):
        (tmp_path / "d.parquet").mkdir()
        check_output(tmp_path / "d.parquet")
    check_output(tmp_path / "new" / "sub" / "r.jsonl")  # missing folders are made
    assert (tmp_path / "new" / "sub").is_dir()
