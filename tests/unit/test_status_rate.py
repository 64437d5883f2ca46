"""``verifleet status``: the rate of a running job is its units done over the
time since its first unit started (issue 21: it always printed 0.00), and the
ETA is what is left at that rate; a job with nothing done says so."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

from rich.console import Console, RenderableType

from verifleet.orchestrator.cli.fleet import progress_view, rate_of
from verifleet.store import JobProgress, JobStatus

START = datetime(2026, 11, 27, 3, 0, 0, tzinfo=UTC)


def _shown(view: RenderableType) -> str:
    out = io.StringIO()
    Console(width=200, file=out, color_system=None).print(view)
    return out.getvalue()


def _running(done: int) -> JobProgress:
    return JobProgress(
        job_id="j1",
        status=JobStatus.RUNNING,
        started_at=START.isoformat(),
        total_units=400,
        done_units=done,
    )


def test_a_running_job_shows_its_rate_and_when_it_will_end() -> None:
    progress = _running(100)
    rate = rate_of(progress, now=START + timedelta(seconds=200))
    assert rate == 0.5
    text = _shown(progress_view(progress, rate))
    assert "rate 0.50 units/s" in text
    assert "ETA 10m" in text  # 300 units left at 0.5 units/s


def test_a_job_with_nothing_done_has_no_rate_and_says_why_there_is_no_eta() -> None:
    progress = _running(0)
    assert rate_of(progress, now=START + timedelta(seconds=30)) is None
    text = _shown(progress_view(progress, None))
    assert "rate - units/s" in text and "ETA unknown (no unit done yet)" in text


def test_a_finished_job_keeps_the_rate_it_ran_at() -> None:
    progress = _running(400).model_copy(
        update={
            "status": JobStatus.DONE,
            "finished_at": (START + timedelta(seconds=100)).isoformat(),
        }
    )
    # Read an hour later: still 4 units/s, not diluted by the time since.
    assert rate_of(progress, now=START + timedelta(hours=1)) == 4.0
    assert "ETA -" in _shown(progress_view(progress, 4.0))
