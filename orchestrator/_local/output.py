"""The output file of a local run: resume from it, journal into it, finalise it."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verifleet.errors import VerifleetError
from verifleet.schemas import (
    CostSummary,
    ExportError,
    ScenarioExecutionResult,
    VerificationResult,
)
from verifleet.store import result_key

from .journal import Journal, journal_path
from .scenario_journal import ScenarioJournal, scenario_journal_path

if TYPE_CHECKING:
    from verifleet.pipeline import ScenarioRun

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
        self.path = path
        self.journal = Journal(journal_path(path))
        self.scenario_journal = ScenarioJournal(scenario_journal_path(path))
        # (key, completed) of every result, per source in the order _existing()
        # reads them: known from scan() on, kept up by record() and
        # record_scenario(), so that finalize() reads the results once.
        self._tracked: tuple[list[tuple[str, bool]], ...] | None = None
        # What the results produced so far cost: known from scan() on, kept up
        # by record(), so that a budget does not read the results again.
        self._costs: CostSummary | None = None
        self._writer_loading = False

    def _existing_scenarios(self) -> list[ScenarioExecutionResult]:
        stored = None
        if self.path.exists():
            from verifleet.orchestrator import read_scenario_results  # as in _sourced

            stored = read_scenario_results(self.path)
        journalled = [r.scenario_result for r in self.scenario_journal.read()]
        return [*(stored or []), *(r for r in journalled if r is not None)]

    def done_scenarios(self, *, retry_errors: bool = False) -> set[str]:
        """The unit key (:func:`~verifleet.schemas.scenario_key`) of every scenario
        run already produced (with ``retry_errors``, of those whose status is not
        ``error``). A run of a scenario changed since, or one without a key,
        names no unit of the job: its unit runs again."""
        return {
            r.unit_key
            for r in self._existing_scenarios()
            if r.unit_key is not None and not (retry_errors and r.status == "error")
        }

    def record_scenario(self, run: ScenarioRun) -> None:
        """Journal one finished scenario run with its turn results."""
        self.scenario_journal.append(run)
        if self._tracked is not None:
            self._tracked[2].extend(_tracked(r) for r in run.results)
        if self._costs is not None:
            for result in run.results:
                self._costs.add(result)

    def _existing(self) -> Iterator[VerificationResult]:
        return (result for _source, result in self._sourced())

    def _sourced(self) -> Iterator[tuple[int, VerificationResult]]:
        """Every result produced for this output with where it is: 0 the output
        file, 1 the journal, 2 the scenario journal (in that order)."""
        if self.path.exists():
            # Only here: the readers import pyarrow, which a run whose output
            # does not exist yet loads in a thread beside its units instead.
            from verifleet.orchestrator import iter_results  # an import cycle at the top

            try:
                for result in iter_results(self.path):
                    yield 0, result
            except ExportError:
                raise
            except Exception as exc:
                raise ExportError(f"{self.path}: cannot read existing results: {exc}") from exc
        for result in self.journal.read():
            yield 1, result
        for run in self.scenario_journal.read():
            for result in run.results:
                yield 2, result

    def spent(self) -> float:
        """What the results already produced for this output cost (0 without
        prices)."""
        if self._costs is not None:
            return self._costs.total_usd
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
        tracked: tuple[list[tuple[str, bool]], ...] = ([], [], [])
        costs = CostSummary()
        for source, result in self._sourced():
            costs.add(result)
            key = result_key(result)
            tracked[source].append((key, result.metadata.completed_without_errors))
            done.add(key)
            if result.metadata.completed_without_errors:
                errored.discard(key)
            else:
                errored.add(key)
        self._tracked = tracked
        self._costs = costs
        return done, errored

    def record(self, results: list[VerificationResult]) -> None:
        """Journal the results of one finished unit."""
        if not self._writer_loading:
            self._writer_loading = True
            _load_writer(self.path)
        for result in results:
            self.journal.append(result)
            if self._tracked is not None:
                self._tracked[1].append(_tracked(result))
            if self._costs is not None:
                self._costs.add(result)

    def finalize(
        self,
        manifest: dict[str, Any] | None = None,
        *,
        written: list[VerificationResult] | None = None,
        scenarios: list[ScenarioExecutionResult] | None = None,
    ) -> int:
        """Write every result (old and new, each once) to the output file.

        Args:
            manifest: The run manifest: kept in a Parquet file's footer and
                written beside the file (``<file>.manifest.json``) in any format.
            written: Filled with the results written, in the file's order, so
                that a caller who wants them need not read the file back.
            scenarios: Filled with the scenario runs written beside them.

        Returns:
            The number of results in the file.
        """
        from verifleet.results import write_manifest_beside
        from verifleet.results.stats import label_cells, labels_path, read_label_entries

        self.journal.close()
        self.scenario_journal.close()
        runs, replaced = _latest_runs(self._existing_scenarios())
        if scenarios is not None:
            scenarios.extend(runs.values())
        # The labels already beside the output (a resumed run, a re-judged file).
        labels = label_cells(read_label_entries(labels_path(self.path)))
        tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}{self.path.suffix}")
        try:
            # One read when scan() and record() saw every result and no scenario
            # run replaced another (its turns are left out by a pass of their own).
            tracked = None if replaced else self._tracked_keys()
            try:
                count = self._write_unique(tmp, runs, replaced, manifest, labels, tracked, written)
            except _Untracked:
                # The files hold other results than this object saw (another
                # writer, or no scan()): find the winners in a pass of their own.
                if written is not None:
                    written.clear()
                count = self._write_unique(tmp, runs, replaced, manifest, labels, None, written)
            os.replace(tmp, self.path)
            if manifest is not None:
                write_manifest_beside(self.path, manifest)
        finally:
            tmp.unlink(missing_ok=True)
        self.journal.remove()
        self.scenario_journal.remove()
        return count

    def _tracked_keys(self) -> list[tuple[str, bool]] | None:
        if self._tracked is None:
            return None
        return [entry for source in self._tracked for entry in source]

    def _write_unique(
        self,
        tmp: Path,
        runs: dict[_Slot, ScenarioExecutionResult],
        replaced: set[_Slot],
        manifest: dict[str, Any] | None,
        labels: Any,
        tracked: list[tuple[str, bool]] | None,
        written: list[VerificationResult] | None,
    ) -> int:
        """Write each result once to ``tmp``; ``tracked``: the (key, completed)
        of every result in reading order, when known (one read of the files),
        else None (a read to find the winners, then a read to write them).

        Raises:
            _Untracked: the files do not hold the results ``tracked`` names.
        """
        from verifleet.orchestrator import write_results

        skip: set[int] = set()
        if tracked is None:
            tracked = []
            for position, result in enumerate(self._existing()):
                if _replaced_turn(result, runs, replaced):
                    skip.add(position)
                tracked.append((result_key(result), result.metadata.completed_without_errors))
        # Each key once: the first result, unless a later one replaces an error
        # (a --retry-errors run journals the new result after the old one).
        winner: dict[str, int] = {}
        errored: set[str] = set()
        for position, (key, completed) in enumerate(tracked):
            if position in skip:
                continue
            if key not in winner or key in errored:
                winner[key] = position
                if completed:
                    errored.discard(key)
                else:
                    errored.add(key)
        known = tracked

        def unique() -> Iterator[VerificationResult]:
            position = -1
            for position, result in enumerate(self._existing()):
                key = result_key(result)
                if position >= len(known) or known[position][0] != key:
                    raise _Untracked
                if winner.get(key) == position:
                    if written is not None:
                        written.append(result)
                    yield result
            if position + 1 != len(known):
                raise _Untracked

        return write_results(
            unique(),
            tmp,
            scenario_results=list(runs.values()) or None,
            manifest=manifest,
            labels=labels,
        )


_Slot = tuple[str, str, int | None]


def _slot(scenario_id: str, answering: str | None, replicate: int | None) -> _Slot:
    """Scenario, answering model and replicate: the place in a run one run fills."""
    return scenario_id, answering or "", replicate


def _latest_runs(
    found: Iterator[ScenarioExecutionResult] | list[ScenarioExecutionResult],
) -> tuple[dict[_Slot, ScenarioExecutionResult], set[_Slot]]:
    """The run kept for each slot, and the slots where a later run replaced an
    earlier one. A later run replaces an errored one (``--retry-errors``) and one
    of another unit key (the scenario changed, so the unit ran again)."""
    runs: dict[_Slot, ScenarioExecutionResult] = {}
    replaced: set[_Slot] = set()
    for run in found:
        slot = _slot(run.scenario_id, run.answering_model, run.replicate)
        kept = runs.get(slot)
        if kept is None or kept.status == "error" or kept.unit_key != run.unit_key:
            if kept is not None:
                replaced.add(slot)
            runs[slot] = run
    return runs, replaced


def _replaced_turn(
    result: VerificationResult, runs: dict[_Slot, ScenarioExecutionResult], replaced: set[_Slot]
) -> bool:
    """Whether ``result`` is a turn of a run another replaced: the kept run's
    history names its own turn results, and a replaced run's turns (of the old
    scenario, or of the errored attempt) must not stand beside them."""
    meta = result.metadata
    if meta.scenario_id is None:
        return False
    slot = _slot(meta.scenario_id, meta.answering.display_string, meta.replicate)
    if slot not in replaced:
        return False
    kept = runs[slot]
    return not any(meta.result_id in turn.result_ids for turn in kept.history)


class _Untracked(VerifleetError):
    """The output's files changed behind the :class:`RunOutput` that tracked them."""


def _tracked(result: VerificationResult) -> tuple[str, bool]:
    return result_key(result), result.metadata.completed_without_errors


def _load_writer(path: Path) -> None:
    """Import what :meth:`RunOutput.finalize` writes a Parquet file with, in a
    thread, while the units run: pyarrow imports pandas at its first array
    (most of a finalize's time when nothing is cached), and a run spends its
    units waiting for model calls. Any failure is left for finalize to meet.
    """

    def load() -> None:
        try:
            import pyarrow as pa

            from verifleet.results._export import parquet  # noqa: F401  (the writer's modules)

            pa.array([0])
        except Exception:  # finalize imports it again and reports
            return

    if path.suffix.lower() in (".parquet", ".pq"):
        threading.Thread(target=load, name="verifleet-writer-import", daemon=True).start()
