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
from typing import IO, Generic, TypeVar

from verifleet.schemas import VerificationResult

__all__ = ["Journal", "LineJournal", "journal_path"]

T = TypeVar("T")


def journal_path(out: Path) -> Path:
    """Where the journal of ``out`` lives."""
    return out.with_name(out.name + ".journal.jsonl")


class LineJournal(Generic[T]):
    """A thread-safe, append-only file of one JSON line per item; subclasses say
    how an item becomes a line (:meth:`encode`) and back (:meth:`decode`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fh: IO[str] | None = None

    def encode(self, item: T) -> str:
        """One item as a line of JSON, without the newline."""
        raise NotImplementedError

    def decode(self, line: str) -> T:
        """One line back into its item.

        Raises:
            ValueError: the line is not an item (a KeyError or TypeError counts too).
        """
        raise NotImplementedError

    def read(self) -> Iterator[T]:
        """Yield the journalled items; a torn last line (the process died while
        writing it) is ignored, any other bad line is an error naming the line.

        Raises:
            ValueError: a line other than the last is unreadable.
        """
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8") as fh:
            lines = fh.readlines()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                yield self.decode(line)
            except (ValueError, KeyError, TypeError) as exc:
                if number == len(lines) and not line.endswith("\n"):
                    return
                raise ValueError(f"{self.path}:{number}: unreadable journal line: {exc}") from exc

    def append(self, item: T) -> None:
        """Append one item and flush it to the OS."""
        line = self.encode(item) + "\n"
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


class Journal(LineJournal[VerificationResult]):
    """The journal of finished question results."""

    def encode(self, item: VerificationResult) -> str:
        return item.model_dump_json()

    def decode(self, line: str) -> VerificationResult:
        return VerificationResult.model_validate_json(line)
