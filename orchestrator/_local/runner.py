"""The local runner: every unit of a job on a thread pool in this process.

The same :func:`verifleet.pipeline.run_unit` the Celery workers call does the
work, so a local run and a fleet run of the same inputs give the same results.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any, TypeVar

from verifleet.limits import LocalCallGate, endpoint_id
from verifleet.pipeline import (
    DiskCallCache,
    PipelineResources,
    ScenarioRun,
    failed_results,
    run_scenario_unit,
    run_unit,
)
from verifleet.schemas import (
    Benchmark,
    BrokenScenario,
    CostSummary,
    JobSpec,
    ModelConfig,
    Question,
    TemplateValidationError,
    VerificationConfig,
    VerificationResult,
    template_problem,
)
from verifleet.store import ScenarioUnit, Unit, expand_scenario_units

from .threads import UnitThreads

__all__ = ["OVERRUN_GRACE", "LocalRunner", "failed_unit_results"]

log = logging.getLogger(__name__)

#: Seconds past ``unit_deadline`` (from the unit's start) after which a unit
#: still running is given up: model calls stop at the deadline, so only a unit
#: stuck outside them (in host code) gets this far.
OVERRUN_GRACE = 5.0

#: Seconds the thread iterating :meth:`LocalRunner.run` waits for a unit at most
#: before it looks again: a window that grew admits more units at once (not
#: only when a unit finishes, a round trip or two later), and ``watch`` runs.
_LOOK_AGAIN = 0.05

_U = TypeVar("_U")  # a unit (question or scenario)
_R = TypeVar("_R")  # what running it returns


class LocalRunner:
    """Runs a job's units concurrently and yields results as they finish.

    How many units run at once follows the endpoints' adaptive windows (see
    :mod:`verifleet.limits`): a quarter more units than the windows of the job's
    endpoints admit calls together (plus four, for units between calls), so the
    windows stay full and few threads wait at a gate; never more than the
    config's ``max_concurrency``. With a gate other than the default local one,
    ``max_concurrency`` units run.

    Args:
        benchmark: The questions (templates are validated by the pipeline per unit).
        config: The verification config; ``max_concurrency`` caps the units at once.
        resources: Per-process caches (chat clients, compiled templates, the
            embedding model); by default a shared instance with a
            :class:`~verifleet.limits.LocalCallGate`.
    """

    def __init__(
        self,
        benchmark: Benchmark,
        config: VerificationConfig,
        *,
        resources: PipelineResources | None = None,
    ) -> None:
        self.benchmark = benchmark
        self.config = config
        self.spec = JobSpec(benchmark, config)
        self.resources = resources or PipelineResources(
            call_gate=LocalCallGate(max_wait=config.unit_deadline),
            call_cache=DiskCallCache() if config.cache else None,
        )
        self._stop = threading.Event()
        self._scope = f"run-{uuid.uuid4().hex}"
        #: Cost of the results already in the output (a resumed run's budget counts it).
        self.spent_before = 0.0
        self._spent = 0.0
        self._costed = 0
        #: Units the budget (``max_cost_usd``) held back, counted as they are refused.
        self.budget_stopped = False
        #: Called (from a unit's thread) once per question whose template does
        #: not compile or is refused, with the problem in the words of
        #: :meth:`Benchmark.validate`; its units fail alone as they run.
        self.on_template_problem: Callable[[str], None] | None = None
        self._reported: set[str] = set()
        self._reported_lock = threading.Lock()
        #: Called by the thread iterating :meth:`run` (or :meth:`run_scenarios`)
        #: every few hundredths of a second while units run; what it raises ends
        #: the iteration at once (call :meth:`stop` first: units not started are
        #: cancelled, those in flight are not waited for). The run's preflight
        #: stops it so when a model fails its test call.
        self.watch: Callable[[], None] | None = None

    def units(self) -> Iterator[Unit]:
        """Every unit of the job, in a stable order."""
        return self.spec.units()

    def count_scenario_units(self) -> int:
        """How many scenario units the job has (a broken scenario's too: each of
        its runs fails alone)."""
        scenarios = len(self.benchmark.scenarios) + len(self.benchmark.broken_scenarios)
        return scenarios * len(self.config.answering_models) * self.config.replicate_count

    def run_scenarios(
        self,
        *,
        done: set[str] | frozenset[str] = frozenset(),
        on_skip: Callable[[ScenarioUnit | BrokenScenario], None] | None = None,
    ) -> Iterator[tuple[ScenarioUnit | BrokenScenario, ScenarioRun]]:
        """Run every scenario unit whose key (:func:`~verifleet.schemas.scenario_key`,
        without a job) is not in ``done``: a changed scenario runs again.

        Yields ``(unit, run)`` in completion order; a scenario that fails has its
        failure in ``run.scenario_result`` (status ``error``), never raised. A
        broken scenario (one that failed validation) yields one such failed run
        per answering model and replicate, first, and runs nothing.
        """
        yield from self._broken_runs(done, on_skip)

        def todo() -> Iterator[ScenarioUnit]:
            for unit in self.scenario_units():
                if unit.key() in done:
                    if on_skip is not None:
                        on_skip(unit)
                    continue
                yield unit

        # as for units: the endpoints' windows decide how many run
        yield from self._pooled("verifleet-scn", todo(), self._run_scenario)

    def scenario_units(self) -> Iterator[ScenarioUnit]:
        """The scenario units :meth:`run_scenarios` runs: the job's."""
        return expand_scenario_units(self.benchmark, self.config)

    def _broken_runs(
        self,
        done: set[str] | frozenset[str],
        on_skip: Callable[[ScenarioUnit | BrokenScenario], None] | None,
    ) -> Iterator[tuple[BrokenScenario, ScenarioRun]]:
        """The failed run of each broken scenario's unit not in ``done``."""
        for broken in self.benchmark.broken_scenarios:
            for answering in self.config.answering_models:
                identity = answering.identity()
                for replicate in range(1, self.config.replicate_count + 1):
                    if broken.unit_key(identity, replicate) in done:
                        if on_skip is not None:
                            on_skip(broken)
                        continue
                    failed = broken.failed_run(identity, replicate, self.config.run_name)
                    yield broken, ScenarioRun(results=[], scenario_result=failed)

    def _run_scenario(self, unit: ScenarioUnit) -> ScenarioRun:
        return run_scenario_unit(unit, self.spec, self.resources)

    def count_units(self) -> int:
        """How many question units the job has."""
        return (
            len(self.benchmark.questions)
            * len(self.config.answering_models)
            * self.config.replicate_count
        )

    def stop(self) -> None:
        """Stop submitting units; those in flight finish in the background (closing
        the iterator of :meth:`run` then does not wait for them)."""
        self._stop.set()

    def run(
        self,
        *,
        done_keys: set[str] | frozenset[str] = frozenset(),
        on_skip: Callable[[Unit], None] | None = None,
    ) -> Iterator[tuple[Unit, list[VerificationResult]]]:
        """Run every unit whose results are not all in ``done_keys``.

        Yields ``(unit, results)`` in completion order. A unit whose pipeline call
        raises (a bug or an infrastructure failure, never a content error) still
        yields one errored result per parsing model, so nothing is silently lost.

        Raises:
            SandboxUnavailable: The sandbox that runs template and trait code
                cannot start on this machine (checked before any unit runs; the
                message names what is missing and the downgrade flag).
        """
        # Refuse up front rather than fail every question on the same cause.
        self.resources.sandbox.start()
        parsing = self.config.parsing_models
        todo = (
            unit for unit in self.units() if not _already_done(unit, parsing, done_keys, on_skip)
        )
        # Threads start as units are submitted, so only as many exist as the
        # windows ever asked for.
        yield from self._pooled("verifleet-unit", todo, self._run_one, overrun=self._overran)

    def _pooled(
        self,
        name: str,
        todo: Iterable[_U],
        run: Callable[[_U], _R],
        *,
        overrun: Callable[[_U], _R] | None = None,
    ) -> Iterator[tuple[_U, _R]]:
        pool = UnitThreads(self.config.max_concurrency, name)
        try:
            yield from self._drain(pool, todo, run, overrun=overrun)
        finally:
            # Nothing is joined: after stop() (Ctrl-C, SIGTERM) the units in
            # flight are not waited for (a model call may take minutes, and the
            # caller is leaving), and those not started are cancelled.
            pool.shutdown()

    def units_at_once(self) -> int:
        """How many units to keep running now (see the class docstring)."""
        most = self.config.max_concurrency
        gate = self.resources.call_gate
        if not isinstance(gate, LocalCallGate):
            return most
        windows: dict[str, int] = {}
        for model in (*self.config.answering_models, *self.config.parsing_models):
            limit = gate.limit(model)
            if limit is None:
                return most  # an endpoint nothing limits: the config decides
            windows[endpoint_id(model)] = limit
        return min(most, sum(windows.values()) * 5 // 4 + 4)

    def _drain(
        self,
        pool: UnitThreads,
        todo: Iterable[_U],
        run: Callable[[_U], _R],
        *,
        overrun: Callable[[_U], _R] | None = None,
    ) -> Iterator[tuple[_U, _R]]:
        """Run ``todo`` on ``pool`` and yield each unit with what it returned; a
        unit still running :data:`OVERRUN_GRACE` seconds past ``unit_deadline``
        is given up and yields ``overrun(unit)`` instead (when given)."""
        # A bounded set of submitted futures keeps memory flat for huge jobs; its
        # size follows the windows as they grow or shrink.
        pending: dict[Future[_R], _U] = {}
        source = iter(todo)
        exhausted = False
        limit = self.config.unit_deadline + OVERRUN_GRACE
        while True:
            if self.watch is not None:
                self.watch()
            window = self.units_at_once()
            while not exhausted and not self._stop.is_set() and len(pending) < window:
                if self._over_budget(len(pending)):
                    self.budget_stopped = True
                    break
                unit = next(source, None)
                if unit is None:
                    exhausted = True
                    break
                pending[pool.submit(functools.partial(run, unit))] = unit
            if not pending:
                return
            timeout = _LOOK_AGAIN
            if overrun is not None:
                timeout = min(timeout, _until_overrun(pool, pending, limit))
            finished, _ = wait(pending, timeout=timeout, return_when=FIRST_COMPLETED)
            for future in finished:
                unit = pending.pop(future)
                value = future.result()
                self._count_cost(value)
                yield unit, value
            if overrun is None:
                continue
            now = time.monotonic()
            for future in list(pending):
                started = pool.started(future)
                if started is not None and now - started > limit:
                    unit = pending.pop(future)
                    pool.abandon(future)
                    log.warning("unit %s overran its deadline and was given up", unit)
                    yield unit, overrun(unit)

    def _overran(self, unit: Unit) -> list[VerificationResult]:
        deadline = self.config.unit_deadline
        return failed_results(
            unit.question,
            unit.answering,
            self.config.parsing_models,
            self.config,
            replicate=unit.replicate,
            error=(
                f"unit given up: it was still running {deadline:g} s (unit_deadline) + "
                f"{OVERRUN_GRACE:g} s after it started, stuck outside any model call; "
                "the run went on without it"
            ),
        )

    def _over_budget(self, in_flight: int) -> bool:
        """Whether spent plus the expected cost of ``in_flight`` units (the mean
        of the finished ones each) reaches the config's ``max_cost_usd``."""
        budget = self.config.max_cost_usd
        if budget is None:
            return False
        mean = self._spent / self._costed if self._costed else 0.0
        return self.spent_before + self._spent + mean * in_flight >= budget

    def _count_cost(self, value: object) -> None:
        if self.config.max_cost_usd is None:
            return
        results = value.results if isinstance(value, ScenarioRun) else value
        summary = CostSummary()
        for result in results if isinstance(results, list) else []:
            summary.add(result)
        self._spent += summary.total_usd
        self._costed += 1

    def _run_one(self, unit: Unit) -> list[VerificationResult]:
        deadline = time.monotonic() + self.config.unit_deadline
        try:
            # This run's own template processes: its templates are compiled side
            # by side there, no other run's (or caller's) requests reach them.
            with self.resources.sandbox.scoped(self._scope):
                self._check_template(unit.question)
                return run_unit(unit, self.spec, self.resources, deadline=deadline)
        except Exception as exc:  # the unit fails, the job goes on
            log.exception("unit %s failed outside the pipeline", unit.question.id)
            return failed_unit_results(unit, self.config.parsing_models, self.config, exc)

    def _check_template(self, question: Question) -> None:
        """Check the question's template where its units run: compiled once in
        this run's template processes (its units then use that compile), each
        question's as its first unit starts, so checking a benchmark costs no
        time before the first unit and is spread over the executors like the
        units. A problem is reported once; the unit's first stage records it
        in its results. An executor failure is left to that stage too."""
        source = question.answer_template
        if not (self.config.template_stages_enabled and source and source.strip()):
            return
        try:
            self.resources.sandbox.load_template(source, question.id)
        except TemplateValidationError as exc:
            with self._reported_lock:
                if question.id in self._reported:
                    return
                self._reported.add(question.id)
            if self.on_template_problem is not None:
                self.on_template_problem(template_problem(f"question {question.id}", exc.problem))
        except Exception:  # the unit's ValidateTemplate stage meets it and records it
            log.debug("template check of %s failed in the sandbox", question.id, exc_info=True)


def _until_overrun(pool: UnitThreads, pending: Iterable[Future[Any]], limit: float) -> float:
    """Seconds until the first running unit of ``pending`` overruns ``limit``
    (at most a second: units not started yet are looked at again then)."""
    now = time.monotonic()
    starts = [s for s in map(pool.started, pending) if s is not None]
    return max(0.05, min([s + limit - now for s in starts] + [1.0]))


def _already_done(
    unit: Unit,
    parsing: list[ModelConfig],
    done_keys: set[str] | frozenset[str],
    on_skip: Callable[[Unit], None] | None,
) -> bool:
    if done_keys and all(key in done_keys for key in unit.result_keys(parsing)):
        if on_skip is not None:
            on_skip(unit)
        return True
    return False


def failed_unit_results(
    unit: Unit,
    parsing_models: list[ModelConfig],
    config: VerificationConfig,
    exc: BaseException,
) -> list[VerificationResult]:
    """One errored result per parsing model for a unit that could not run."""
    return failed_results(
        unit.question,
        unit.answering,
        parsing_models,
        config,
        replicate=unit.replicate,
        error=f"unit failed: {type(exc).__name__}: {exc}",
    )
