"""An append-only journal of finished results beside the output file.

Every result is appended (one JSON line, flushed) the moment its unit finishes, so
an interrupted run — Ctrl-C, a crash, a killed process — loses at most the units
in flight. The next run with the same ``--out`` reads the output file and the
journal and skips every unit already done; the journal is removed once the final
file is written.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from verifleet.schemas import VerificationResult

__all__ = ["Journal", "journal_path"]


def journal_path(out: Path) -> Path:
    """Where the journal of ``out`` lives."""
    return out.with_name(out.name + ".journal.jsonl")


class Journal:
    """Thread-safe appender and reader of the results journal."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fh: IO[str] | None = None

    def read(self) -> Iterator[VerificationResult]:
        """Yield the journalled results; a torn last line (the process died while
        writing it) is ignored, any other bad line is an error naming the line."""
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8") as fh:
            lines = fh.readlines()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                yield VerificationResult.model_validate_json(line)
            except ValueError as exc:
                if number == len(lines) and not line.endswith("\n"):
                    return
                raise ValueError(f"{self.path}:{number}: unreadable journal line: {exc}") from exc

    def append(self, result: VerificationResult) -> None:
        """Append one result and flush it to the OS."""
        line = result.model_dump_json() + "\n"
        with self._lock:
            if self._fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = self.path.open("a", encoding="utf-8")
            self._fh.write(line)
            self._fh.flush()

    def close(self) -> None:
        """Close the file handle (the journal stays on disk)."""
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def remove(self) -> None:
        """Delete the journal after the final output was written."""
        self.close()
        self.path.unlink(missing_ok=True)
