"""``verifleet view`` on a port another viewer holds fails before printing a URL:
a URL printed for a taken port would show the other viewer's data."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.browser import ViewerProcess
from _support.fleet import run_cli
from _support.viewer_data import full_run

from verifleet.orchestrator import write_results

pytestmark = pytest.mark.integration


def test_a_taken_port_fails_before_any_url_is_printed(tmp_path: Path) -> None:
    mine, theirs = tmp_path / "mine.parquet", tmp_path / "theirs.parquet"
    write_results(full_run(8), mine)
    write_results(full_run(8), theirs)
    other = ViewerProcess(str(theirs))
    try:
        done = run_cli("view", str(mine), "--port", str(other.port))
        still_serving = other.proc.poll() is None
    finally:
        other.stop()
    assert done.returncode == 2, done.stderr[-2000:]
    assert "in use" in done.stderr and "--port" in done.stderr
    assert "http://" not in done.stderr + done.stdout
    assert "results (" not in done.stderr  # failed before loading anything
    assert still_serving
