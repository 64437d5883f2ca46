"""The local driver: scan the output, run the units, record them, finalize.

``verifleet run`` (and ``reverify``) and :func:`verifleet.run` both drive a
:class:`~verifleet.orchestrator.LocalRunner` through this one loop; each passes
its own hooks (the CLI its progress bar and tallies, the API its callback), so
resume, retries, carried results, the preflight and sandbox checks, the budget
and interrupt handling behave the same in both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from verifleet.pipeline import ScenarioRun
    from verifleet.schemas import (
        ScenarioExecutionResult,
        VerificationResult,
        VerificationResultSet,
    )

    from .output import RunOutput
    from .runner import LocalRunner

__all__ = ["LocalDriver"]


def _no_hook(*_args: Any) -> None:
    return None


class LocalDriver:
    """One local run of ``runner`` into ``out`` (or into memory when ``out`` is
    None), driven by the caller's hooks.

    Creating it reads the existing output once (resume keys, errored keys and,
    with a budget, what they cost) and journals the ``carried`` results not
    already there; :meth:`run` runs the units not done; :meth:`finalize` writes
    the output file.

    Args:
        runner: The units to run.
        out: The output file (already checked and locked by the caller); None
            keeps the results in :attr:`results` and :attr:`scenario_runs` only.
        retry_errors: Run again the units whose results in ``out`` have errors.
        carried: Results kept as they are (``reverify --stale``'s fresh ones):
            journalled once, so a resumed run does not add them again.
        preflight: A :class:`PreflightGate`: units' calls go beside its test
            calls, a result is recorded once they answered, and a failed one
            stops the run.
        sandbox_ready: Raises when the sandbox executor could not start; called
            before any result is recorded.

    Raises:
        ExportError: the output file cannot be read.
    """

    def __init__(
        self,
        runner: LocalRunner,
        out: Path | None = None,
        *,
        retry_errors: bool = False,
        carried: Iterable[VerificationResult] = (),
        preflight: Any = None,
        sandbox_ready: Callable[[], None] | None = None,
    ) -> None:
        from verifleet.store import result_key

        from .output import RunOutput

        self.runner = runner
        self.output: RunOutput | None = None
        self.results: list[VerificationResult] = []
        self.scenario_runs: list[ScenarioExecutionResult] = []
        self.skipped = 0
        self._preflight = preflight
        self._ready = sandbox_ready or _no_hook
        done: set[str] = set()
        errored: set[str] = set()
        done_scenarios: set[str] = set()
        if out is not None:
            self.output = RunOutput(out)
            done, errored = self.output.scan()
            if retry_errors:
                done -= errored
            done_scenarios = self.output.done_scenarios(retry_errors=retry_errors)
        #: Keys of results in the output that have errors (before this run).
        self.errored = errored
        self._done = done
        self._done_scenarios = done_scenarios
        self.carried = list(carried)
        for result in self.carried:
            key = result_key(result)
            if key not in done and self.output is not None:
                self.output.record([result])
                done.add(key)
        if preflight is not None:
            # A unit's first real call of a model starts that model's test call
            # (when lazy); a failed one stops the run at once, not when a unit ends.
            runner.resources.before_call = preflight.before_call
            runner.watch = self._stop_on_failed_preflight
        if runner.config.max_cost_usd is not None and self.output is not None:
            runner.spent_before = self.output.spent()
        self.total = runner.count_units() + runner.count_scenario_units()

    def run(
        self,
        on_results: Callable[[list[VerificationResult]], None] = _no_hook,
        on_scenario: Callable[[ScenarioRun], None] = _no_hook,
        on_skip: Callable[[], None] = _no_hook,
    ) -> None:
        """Run every unit not done, then every scenario unit; record each.

        ``on_results`` gets each finished unit's results, ``on_scenario`` each
        scenario run, ``on_skip`` each unit found done, all in the calling thread.

        Raises:
            SandboxUnavailable: the sandbox executor could not start (nothing
                recorded).
            PreflightError: a model failed its test call (nothing recorded).
            KeyboardInterrupt: the runner is stopped and the journals closed
                first; they keep the finished units for a resume.
        """

        def skip(_unit: Any) -> None:
            self.skipped += 1
            on_skip()

        runner = self.runner
        try:
            for _unit, results in runner.run(done_keys=self._done, on_skip=skip):
                self._before_record()
                if self.output is not None:
                    self.output.record(results)
                else:
                    self.results.extend(results)
                on_results(results)
            for _scenario, run in runner.run_scenarios(done=self._done_scenarios, on_skip=skip):
                self._before_record()
                if self.output is not None:
                    self.output.record_scenario(run)
                else:
                    self.results.extend(run.results)
                    if run.scenario_result is not None:
                        self.scenario_runs.append(run.scenario_result)
                on_scenario(run)
        except BaseException:
            runner.stop()
            if self.output is not None:
                self.output.journal.close()
                self.output.scenario_journal.close()
            raise
        self._before_record()

    def finalize(self, manifest: dict[str, Any] | None = None) -> int:
        """Write every result of the output (old and new, each once) to its file.

        Returns:
            The number of results in the file (in memory without an output).
        """
        if self.output is None:
            return len(self.results)
        return self.output.finalize(manifest)

    def finalize_results(self) -> VerificationResultSet:
        """Finalize, and return every result of the output (old and new, each
        once) and its scenario runs from memory, as a read of the finalized
        file would give them: no second read of the output.

        Scenario runs are returned only where the output's format keeps them
        (Parquet, JSON), as reading the file back would.
        """
        from verifleet.results import resolve_format, scenario_errors
        from verifleet.schemas import VerificationResultSet

        if self.output is None:
            runs = self.scenario_runs
            results = self.results
        else:
            results, runs = [], []
            self.output.finalize(written=results, scenarios=runs)
            if resolve_format(self.output.path, None) not in ("parquet", "json"):
                runs = []
        return VerificationResultSet(
            results=results, scenario_results=runs or None, errors=scenario_errors(runs or None)
        )

    def _before_record(self) -> None:
        """Stop the run when its sandbox could not start or a model failed its
        test call: wait for the test calls started so far, so a model that does
        not answer leaves nothing recorded.

        Raises:
            SandboxUnavailable: the configured isolation cannot be set up.
            PreflightError: naming each model that did not answer.
        """
        try:
            self._ready()
            if self._preflight is not None:
                self._preflight.wait()
        except BaseException:
            self.runner.stop()
            raise

    def _stop_on_failed_preflight(self) -> None:
        failure = self._preflight.failure()
        if failure is not None:
            self.runner.stop()
            raise failure
