"""RunOutput.finalize: each result once (a retried error replaced by its
re-run), whether it knows the files' results from scan() and record() (one
read) or has to find them (another writer added to the journal meanwhile)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._support.factories import make_result
from verifleet.orchestrator import iter_results
from verifleet.orchestrator._local.journal import Journal, journal_path
from verifleet.orchestrator._local.output import RunOutput
from verifleet.schemas import VerificationResult
from verifleet.store import result_key


def _summary(path: Path) -> list[tuple[str, str | None]]:
    return [(r.metadata.question_id, r.metadata.error) for r in iter_results(path)]


def _first_run(path: Path) -> None:
    """q1 fine, q2 errored, written to the output file."""
    out = RunOutput(path)
    out.scan()
    out.record([make_result("q1")])
    out.record([make_result("q2", error="boom")])
    assert out.finalize() == 2


@pytest.mark.parametrize("suffix", [".parquet", ".json"])
def test_retried_error_replaces_the_old_result_in_one_read(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"out{suffix}"
    _first_run(path)
    out = RunOutput(path)
    done, errored = out.scan()
    assert len(done) == 2 and len(errored) == 1
    # --retry-errors: q2 again (fine now), q3 new, q1 not re-run.
    out.record([make_result("q2")])
    out.record([make_result("q3")])
    assert out.finalize() == 3
    assert _summary(path) == [("q1", None), ("q2", None), ("q3", None)]
    assert not journal_path(path).exists()


def test_results_journalled_behind_its_back_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "out.parquet"
    _first_run(path)
    out = RunOutput(path)
    out.scan()
    out.record([make_result("q3")])
    # Another journal writer (not this object): its results are unknown to the
    # keys tracked since scan(); finalize must still keep every result once.
    other = Journal(journal_path(path))
    other.append(make_result("q4"))
    other.append(make_result("q2"))
    other.close()
    assert out.finalize() == 4
    # In reading order, each key where its winner was read (q2's re-run last).
    assert _summary(path) == [("q1", None), ("q3", None), ("q4", None), ("q2", None)]


def test_finalize_without_scan_dedups_by_key(tmp_path: Path) -> None:
    path = tmp_path / "out.parquet"
    out = RunOutput(path)
    first, again = make_result("q1"), make_result("q1")
    assert result_key(first) == result_key(again)
    out.record([first])
    out.record([again])
    assert out.finalize() == 1
    assert _summary(path) == [("q1", None)]


def _priced(question_id: str, cost: float) -> VerificationResult:
    result = make_result(question_id)
    assert result.template is not None
    result.template.usage_metadata = {"parsing": {"model": "m-judge", "cost_usd": cost}}
    return result


def test_spent_after_scan_counts_what_scan_read_and_what_was_recorded(tmp_path: Path) -> None:
    """A budget's ``spent()`` comes from the scan (no second read of the output)
    and stays right as results and carried results are journalled."""
    path = tmp_path / "out.parquet"
    first = RunOutput(path)
    first.scan()
    first.record([_priced("q1", 0.25), _priced("q2", 0.5)])
    first.finalize()
    out = RunOutput(path)
    out.scan()
    assert out.spent() == pytest.approx(0.75)
    # The file is gone: a spent() that read the output again would see nothing.
    path.unlink()
    out.record([_priced("q3", 0.125)])
    assert out.spent() == pytest.approx(0.875)
    # Without a scan it reads what is there (the journal alone now).
    assert RunOutput(path).spent() == pytest.approx(0.125)
