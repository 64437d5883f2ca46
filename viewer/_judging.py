"""What the viewer adds to a researcher's judgement: human labels on results, and
the paired comparison of two runs (the figures of ``verifleet compare``).

Labels are read and written by :mod:`verifleet.results.stats` only (one
reader and writer of ``<results>.labels.jsonl``); the comparison is that
package's :func:`~verifleet.results.stats.compare_runs`, so the page and
the command line cannot disagree.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request

from verifleet.results.stats import (
    append_label,
    compare_runs,
    labels_path,
    read_label_entries,
    unit_key,
)
from verifleet.schemas import VerificationResult
from verifleet.web import is_loopback

from ._errors import ViewerError
from ._runs import FileRun, Run

__all__ = [
    "LABEL_NOTE_LIMIT",
    "PairedCache",
    "label_state",
    "paired",
    "set_label",
    "write_refusal",
]

LABEL_NOTE_LIMIT = 2000
"""The longest note a label may carry, in characters."""

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _labels_file(run: Run) -> Path | None:
    """Where ``run``'s labels are kept: beside its results file; None for a job
    (its store keeps none)."""
    return labels_path(run.path) if isinstance(run, FileRun) else None


def label_state(run: Run, result: VerificationResult) -> dict[str, object]:
    """The label of ``result``'s answer and whether this run can take labels.

    Returns:
        ``label`` (``correct``, ``note``; None when unlabelled), ``writable`` and,
        when not writable, ``why``.

    Raises:
        StatisticsError: the labels file beside the results is not valid.
    """
    path = _labels_file(run)
    if path is None:
        return {
            "label": None,
            "writable": False,
            "why": "labels are kept beside a results file: write the job's results to a "
            "file (`verifleet results JOB --out F.parquet`) and view that file to label them",
        }
    found = read_label_entries(path).get(unit_key(result))
    return {"label": found.as_dict() if found else None, "writable": True, "why": None}


def set_label(run: Run, row: int, body: object) -> dict[str, object]:
    """Record a person's label of the answer at ``row`` (``correct`` true or
    false, or null to withdraw it, and an optional ``note``); the recorded
    verdict is left as it is.

    Returns:
        The label state after the change (as :func:`label_state`).

    Raises:
        ValueError: the body is not a label (the viewer answers 400).
        ViewerError: the run keeps no labels, or there is no such row.
        OSError: the labels file cannot be written.
    """
    if not isinstance(body, dict) or set(body) - {"correct", "note"}:
        raise ValueError("a label is a JSON object with 'correct' and an optional 'note'")
    correct, note = body.get("correct"), body.get("note")
    if correct is not None and not isinstance(correct, bool):
        raise ValueError("'correct' must be true, false or null (to withdraw the label)")
    if note is not None and not isinstance(note, str):
        raise ValueError("'note' must be text")
    note = (note or "").strip() or None
    if note is not None and len(note) > LABEL_NOTE_LIMIT:
        raise ValueError(f"a note holds at most {LABEL_NOTE_LIMIT} characters")
    path = _labels_file(run)
    if path is None:
        raise ViewerError(str(label_state(run, run.result(row))["why"]))
    result = run.result(row)
    append_label(
        path,
        unit_key(result),
        correct,
        note,
        labelled_at=datetime.now(UTC).isoformat(timespec="seconds"),
        source="viewer",
    )
    return label_state(run, result)


def write_refusal(request: Request, *, token: bool) -> str | None:
    """Why a state-changing request must be refused, or None to let it through.

    A request that changes state (any method but GET, HEAD, OPTIONS) must come
    from the viewer's own page: its ``Origin`` must name the very host and port
    the request was sent to (a page on another site, or a rebound name, sends
    its own), and its body must be JSON (which another site's page cannot send
    without a CORS preflight the viewer never answers). Without a token, the
    client must also be on this machine.
    """
    if request.method in _SAFE_METHODS:
        return None
    origin = request.headers.get("origin")
    host = request.headers.get("host", "").lower()
    if not origin or urlsplit(origin).netloc.lower() != host or not host:
        return "changes are accepted from the viewer's own page only (Origin does not match)"
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return "changes are sent as application/json"
    if not token and not (request.client and is_loopback(request.client.host)):
        return "without a token, changes are accepted from this machine only"
    return None


class PairedCache:
    """Paired comparisons already computed, for runs that cannot change (files)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[tuple[int, int, int, int, float], dict[str, object]] = {}

    def get(self, a: int, before: Run, b: int, after: Run, level: float) -> dict[str, Any]:
        """The comparison of ``before`` (run ``a``) with ``after`` (run ``b``);
        recomputed when a live run has grown.

        Raises:
            StatisticsError: a run holds two results of the same pair.
        """
        key = (a, b, len(before.index), len(after.index), level)
        with self._lock:
            if key in self._kept and not (before.live or after.live):
                return self._kept[key]
        found = paired(before, after, level)
        with self._lock:
            self._kept[key] = found
        return found


def paired(before: Run, after: Run, level: float = 0.95) -> dict[str, object]:
    """``verifleet compare``'s figures for two runs: what its ``--json`` prints
    (with the runs' names as labels).

    Raises:
        StatisticsError: a run holds two results of the same pair.
    """
    report = compare_runs(
        before.iter_full(),
        after.iter_full(),
        label_a=before.name,
        label_b=after.name,
        level=level,
    )
    return report.as_dict() | {"level": level}
