"""The output file of a local run: resume from it, journal into it, finalise it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from verifleet.pipeline import ScenarioRun
from verifleet.schemas import ExportError, ScenarioExecutionResult, VerificationResult
from verifleet.store import result_key

from .journal import Journal, journal_path
from .runner import scenario_done_key
from .scenario_journal import ScenarioJournal, scenario_journal_path

__all__ = ["RunOutput"]


class RunOutput:
    """Results of a run with a given ``--out``.

    Results already in the output file or in its journal count as done; new ones
    go to the journal as they finish; :meth:`finalize` writes the merged,
    de-duplicated set to the output file atomically (write a temporary file, then
    rename) and removes the journal. Scenario runs go to their own journal, each
    whole with its turn results; Parquet and JSON outputs keep them (JSON Lines
    and CSV cannot: their scenarios run again on resume).
    """

    def __init__(self, path: Path) -> None:
        from verifleet.orchestrator import iter_results  # avoid an import cycle

        self.path = path
        self.journal = Journal(journal_path(path))
        self.scenario_journal = ScenarioJournal(scenario_journal_path(path))
        self._iter_results = iter_results

    def _existing_scenarios(self) -> list[ScenarioExecutionResult]:
        from verifleet.orchestrator import read_scenario_results

        stored = read_scenario_results(self.path) if self.path.exists() else None
        journalled = [r.scenario_result for r in self.scenario_journal.read()]
        return [*(stored or []), *(r for r in journalled if r is not None)]

    def done_scenarios(self, *, retry_errors: bool = False) -> set[str]:
        """:func:`scenario_done_key` of every scenario run already produced (with
        ``retry_errors``, of those whose status is not ``error``)."""
        return {
            scenario_done_key(r.scenario_id, r.answering_model or "", r.replicate)
            for r in self._existing_scenarios()
            if not (retry_errors and r.status == "error")
        }

    def record_scenario(self, run: ScenarioRun) -> None:
        """Journal one finished scenario run with its turn results."""
        self.scenario_journal.append(run)

    def _existing(self) -> Iterator[VerificationResult]:
        if self.path.exists():
            try:
                yield from self._iter_results(self.path)
            except ExportError:
                raise
            except Exception as exc:
                raise ExportError(f"{self.path}: cannot read existing results: {exc}") from exc
        yield from self.journal.read()
        for run in self.scenario_journal.read():
            yield from run.results

    def spent(self) -> float:
        """What the results already produced for this output cost (0 without
        prices)."""
        from verifleet.schemas import CostSummary

        summary = CostSummary()
        for result in self._existing():
            summary.add(result)
        return summary.total_usd

    def done_keys(self, *, retry_errors: bool = False) -> set[str]:
        """Keys of every result already produced for this output; with
        ``retry_errors``, of those that completed without errors (the errored
        ones run again, and :meth:`finalize` keeps the new result alone)."""
        done, errored = self.scan()
        return done - errored if retry_errors else done

    def scan(self) -> tuple[set[str], set[str]]:
        """Keys of every result already produced, and of those whose last
        result has an error (``completed_without_errors`` false).

        Raises:
            ExportError: the output file cannot be read.
            ValueError: a journal line other than the last is unreadable.
        """
        done: set[str] = set()
        errored: set[str] = set()
        for result in self._existing():
            key = result_key(result)
            done.add(key)
            if result.metadata.completed_without_errors:
                errored.discard(key)
            else:
                errored.add(key)
        return done, errored

    def record(self, results: list[VerificationResult]) -> None:
        """Journal the results of one finished unit."""
        for result in results:
            self.journal.append(result)

    def finalize(self, manifest: dict[str, Any] | None = None) -> int:
        """Write every result (old and new, each once) to the output file.

        Args:
            manifest: The run manifest: kept in a Parquet file's footer and
                written beside the file (``<file>.manifest.json``) in any format.

        Returns:
            The number of results in the file.
        """
        from verifleet.orchestrator import write_results
        from verifleet.orchestrator.stats import label_cells, labels_path, read_label_entries

        from .._export.manifest import write_manifest_beside

        self.journal.close()
        self.scenario_journal.close()
        runs: dict[str, ScenarioExecutionResult] = {}
        for run in self._existing_scenarios():
            key = scenario_done_key(run.scenario_id, run.answering_model or "", run.replicate)
            # A retried run (--retry-errors) replaces the errored one it re-ran.
            if key not in runs or runs[key].status == "error":
                runs[key] = run
        # Each key once: the first result, unless a later one replaces an error
        # (a --retry-errors run journals the new result after the old one).
        winner: dict[str, int] = {}
        errored: set[str] = set()
        for position, result in enumerate(self._existing()):
            key = result_key(result)
            if key not in winner or key in errored:
                winner[key] = position
                if result.metadata.completed_without_errors:
                    errored.discard(key)
                else:
                    errored.add(key)

        def unique() -> Iterator[VerificationResult]:
            for position, result in enumerate(self._existing()):
                if winner[result_key(result)] == position:
                    yield result

        tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}{self.path.suffix}")
        try:
            count = write_results(
                unique(),
                tmp,
                scenario_results=list(runs.values()) or None,
                manifest=manifest,
                # The labels already beside the output (a resumed run, a re-judged file).
                labels=label_cells(read_label_entries(labels_path(self.path))),
            )
            os.replace(tmp, self.path)
            if manifest is not None:
                write_manifest_beside(self.path, manifest)
        finally:
            tmp.unlink(missing_ok=True)
        self.journal.remove()
        self.scenario_journal.remove()
        return count
