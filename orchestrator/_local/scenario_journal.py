"""The journal of finished scenario runs beside a local run's output file.

One JSON line per run holds the run's ``ScenarioExecutionResult`` *and* all its
turn results, so a run is journalled whole or (a torn last line after a crash)
not at all: a resumed run never finds turns without their scenario or a
scenario without its turns.
"""

from __future__ import annotations

import json
from pathlib import Path

from verifleet.pipeline import ScenarioRun
from verifleet.schemas import ScenarioExecutionResult, VerificationResult

from .journal import LineJournal

__all__ = ["ScenarioJournal", "scenario_journal_path"]


def scenario_journal_path(out: Path) -> Path:
    """Where the scenario journal of ``out`` lives."""
    return out.with_name(out.name + ".scenarios.journal.jsonl")


class ScenarioJournal(LineJournal[ScenarioRun]):
    """Thread-safe appender and reader of journalled scenario runs."""

    def encode(self, item: ScenarioRun) -> str:
        assert item.scenario_result is not None  # run_scenario always sets it
        return (
            '{"run": '
            + item.scenario_result.model_dump_json()
            + ', "results": ['
            + ", ".join(r.model_dump_json() for r in item.results)
            + "]}"
        )

    def decode(self, line: str) -> ScenarioRun:
        data = json.loads(line)
        return ScenarioRun(
            results=[VerificationResult.model_validate(r) for r in data["results"]],
            scenario_result=ScenarioExecutionResult.model_validate(data["run"]),
        )
