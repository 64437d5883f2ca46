"""The journal of finished scenario runs beside a local run's output file.

One JSON line per run holds the run's ``ScenarioExecutionResult`` *and* all its
turn results, so a run is journalled whole or (a torn last line after a crash)
not at all: a resumed run never finds turns without their scenario or a
scenario without its turns.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from verifleet.pipeline import ScenarioRun
from verifleet.schemas import ScenarioExecutionResult, VerificationResult

__all__ = ["ScenarioJournal", "scenario_journal_path"]


def scenario_journal_path(out: Path) -> Path:
    """Where the scenario journal of ``out`` lives."""
    return out.with_name(out.name + ".scenarios.journal.jsonl")


class ScenarioJournal:
    """Thread-safe appender and reader of journalled scenario runs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fh: IO[str] | None = None

    def read(self) -> Iterator[ScenarioRun]:
        """Yield the journalled runs; a torn last line is ignored, any other bad
        line is an error naming the line.

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
                data = json.loads(line)
                yield ScenarioRun(
                    results=[VerificationResult.model_validate(r) for r in data["results"]],
                    scenario_result=ScenarioExecutionResult.model_validate(data["run"]),
                )
            except (ValueError, KeyError, TypeError) as exc:
                if number == len(lines) and not line.endswith("\n"):
                    return
                raise ValueError(f"{self.path}:{number}: unreadable journal line: {exc}") from exc

    def append(self, run: ScenarioRun) -> None:
        """Append one finished run (its result and turn results) and flush it."""
        assert run.scenario_result is not None
        line = (
            '{"run": '
            + run.scenario_result.model_dump_json()
            + ', "results": ['
            + ", ".join(r.model_dump_json() for r in run.results)
            + "]}\n"
        )
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
