"""The tasks that run units through the pipeline and store their results: one
unit, several units of one job one after the other, a scenario unit.

Content errors never leave the pipeline (they are inside the results). Redis
being unreachable (a restart, a failover) is retried *inside* the task until the
unit deadline: Celery's own ``autoretry`` republishes the task through the very
broker that is down, and when that publish fails Celery rejects the message
without requeueing it (the unit is lost). The task's message stays unacked in Redis meanwhile, so even a worker
that dies during the outage loses nothing. A redelivered task finds its unit
done and returns at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, TypeVar

from celery import Task, signals

from verifleet.limits import RedisCallGate
from verifleet.pipeline import PipelineResources, failed_results, run_scenario_unit, run_unit
from verifleet.schemas import (
    ScenarioExecutionResult,
    ScenarioTerminalFailure,
    compute_template_id,
)
from verifleet.store import (
    BATCH_TASK_NAME,
    DEFAULT_QUEUE,
    SCENARIO_TASK_NAME,
    TASK_NAME,
    TASK_NAMES,
    JobStatus,
    Liveness,
    QueueFeeder,
    RedisCallCache,
    RedisTarget,
    ResultStore,
    Unit,
    UnitWrite,
    scenario_result_keys,
)

from ._breaker import FAILED, guarded, until_redis_answers
from ._budget import account_unit, admit_unit
from ._feeder import FeederThread
from ._isolation import UnitGate
from ._jobs import JobCache, JobSpec
from ._quarantine import fault_for_tests
from ._reaper import LivenessThread, process_owner_id
from ._reverify import reverify_fleet_scenario, reverify_fleet_unit
from ._settings import WorkerSettings
from ._stalls import StallDetector
from ._supervisor import announce_ready
from ._unit_times import UnitTimes
from .app import app

__all__ = ["run_scenario_task", "run_unit_task", "run_units_task"]

log = logging.getLogger(__name__)

# reward_tasks imports it from here.
_until_redis_answers = until_redis_answers
T = TypeVar("T")


@dataclass(frozen=True)
class _ProcessState:
    """What one worker process builds once and every task thread shares: the
    store's connection pool, the job spec cache, the pipeline's client, template
    and embedding caches, and this process's liveness heartbeat."""

    settings: WorkerSettings
    store: ResultStore
    jobs: JobCache
    resources: PipelineResources
    owner: str
    liveness: LivenessThread
    unit_gate: UnitGate
    unit_times: UnitTimes


_state_lock = threading.Lock()
_state: _ProcessState | None = None

#: The most Redis connections one worker process opens. redis-py 8 caps a pool at
#: 100 by default and then raises "Too many connections": a worker's 128 threads
#: (each holding one connection while it waits for an endpoint's window with
#: BLPOP) ran into it. Connections are made as threads need them.
MAX_REDIS_CONNECTIONS = 4096


def worker_store(settings: WorkerSettings) -> ResultStore:
    """The store of a worker process, with a connection pool that fits its threads.

    Raises:
        ConfigError: a malformed Redis URL or TLS option.
    """
    client = RedisTarget.parse(settings.redis_url).client(
        health_check_interval=30, max_connections=MAX_REDIS_CONNECTIONS
    )
    return ResultStore(client, prefix=settings.prefix)


def _process_state() -> _ProcessState:
    global _state
    with _state_lock:
        if _state is None:
            settings: WorkerSettings = app.conf.verifleet_settings
            store = worker_store(settings)
            owner = process_owner_id()
            gate = RedisCallGate(
                store.client,
                lease_seconds=settings.lease_seconds,
                max_wait=settings.unit_deadline,
                prefix=settings.prefix,
                keep_idle=settings.keep_slots,
                owner=owner,
            )
            jobs = JobCache(store)
            stalls = StallDetector(store, jobs, app, settle=settings.stall_settle)
            liveness = LivenessThread(Liveness(store), owner, app, stalls=stalls)
            liveness.start()
            _state = _ProcessState(
                settings=settings,
                store=store,
                jobs=jobs,
                resources=PipelineResources(
                    call_gate=gate, call_cache=RedisCallCache(store.client, prefix=settings.prefix)
                ),
                owner=owner,
                liveness=liveness,
                unit_gate=UnitGate(),
                unit_times=UnitTimes(),
            )
        return _state


_feeder: FeederThread | None = None


@signals.worker_ready.connect
def _start_heartbeat(sender: Any = None, **_kwargs: Any) -> None:
    global _feeder
    state = _process_state()
    # From now on the supervisor restarts this process if it ends unasked.
    announce_ready()
    # The queues this worker consumes (-Q / --queues) are the ones it feeds.
    try:
        queues = sorted(sender.app.amqp.queues.consume_from)
    except AttributeError:
        queues = [DEFAULT_QUEUE]
    with _state_lock:
        if _feeder is None:
            with app.connection_for_write() as conn:
                # Each message a worker holds is a busy thread (see QueueFeeder).
                busy_key = str(conn.default_channel.unacked_key)
            feeders = [
                QueueFeeder(
                    state.store.client,
                    app,
                    queue,
                    state.jobs.get,
                    prefix=state.settings.prefix,
                    max_per_message=state.settings.units_per_message,
                    spread=state.settings.feed_spread,
                    message_seconds=state.settings.message_seconds,
                    busy_key=busy_key,
                    unit_seconds=state.unit_times.get,
                )
                for queue in queues
            ]
            _feeder = FeederThread(feeders)
            _feeder.start()


@signals.task_received.connect
def _hold(request: Any = None, **_kwargs: Any) -> None:
    # Runs in the consumer when a message arrives, before a thread picks it up:
    # prefetched tasks of a worker that dies are recorded too.
    if request is None or request.name not in TASK_NAMES:
        return
    state = _process_state()
    task = {"args": list(request.args), "kwargs": dict(request.kwargs)}
    state.liveness.hold(request.id, task)


@signals.task_postrun.connect
def _release(task_id: str = "", task: Any = None, **_kwargs: Any) -> None:
    if task is None or task.name not in TASK_NAMES:
        return
    _process_state().liveness.release(task_id)


def _job_spec(state: _ProcessState, job_id: str, deadline: float) -> JobSpec | None:
    """The job's spec (cached per process: a round trip only for a job's first unit
    here), or None for a job the store does not know."""
    try:
        return _until_redis_answers(lambda: state.jobs.get(job_id), deadline=deadline)
    except KeyError:
        log.warning("task for unknown job %s dropped", job_id)
        return None


def _take_up(
    state: _ProcessState,
    job_id: str,
    units: list[tuple[str, str | None]],
    deadline: float,
    carry: list[UnitWrite] | None = None,
) -> list[str | bool]:
    """Take units up (``(key, template source)`` each): status, already done and
    mark started in one round trip, which also brings the description of a
    unit's template (stored at submission) when this process has none, so no
    executor is asked for it. The description is the job's submitter's word: it
    is primed for this job alone (used inside ``sandbox.scoped(job_id)``), never
    for another job's units. ``carry``, finished units of the same message, is
    written first in the same round trip.

    Returns:
        For each unit, what the task returns when it has nothing to run
        (``"unknown-job"``, ``"cancelled"``, ``"already-done"``), else whether
        it is a suspect (an earlier start never finished: it runs alone, see
        :mod:`._isolation`).
    """
    sandbox = state.resources.sandbox
    asked: set[str] = set()
    begins: list[tuple[str, str | None]] = []
    for key, template in units:
        wanted = None
        if template is not None and template.strip() and not sandbox.knows(template, scope=job_id):
            # Replicates share a template: its description comes once a step.
            wanted = compute_template_id(template)
            if wanted in asked:
                wanted = None
            asked.add(wanted or "")
        begins.append((key, wanted))
    if carry:
        # The carried units' work is done and must not be lost: the write's own deadline.
        deadline = time.monotonic() + state.settings.unit_deadline
    _finished, starts = _until_redis_answers(
        lambda: state.store.step_units(job_id, carry or [], begins), deadline=deadline
    )
    begun: list[str | bool] = []
    for (_key, template), start in zip(units, starts, strict=True):
        if start.template is not None and template is not None:
            sandbox.prime(template, start.template, scope=job_id)
        if start.status is None:
            log.warning("task for unknown job %s dropped", job_id)
            begun.append("unknown-job")
        elif start.status == JobStatus.CANCELLED:
            begun.append("cancelled")
        elif start.status == JobStatus.FAILED:
            begun.append(FAILED)
        else:
            begun.append("already-done" if start.done else start.tries > 1)
    return begun


def _admitted(state: _ProcessState, spec: JobSpec, job_id: str, key: str, deadline: float) -> bool:
    """The job's budget (``max_cost_usd``) lets the unit start; a refused unit
    stays undone for ``resume`` with a larger budget."""
    client, prefix = state.store.client, state.settings.prefix
    return _until_redis_answers(
        lambda: admit_unit(client, prefix, spec.config, job_id, key), deadline=deadline
    )


def _account(
    state: _ProcessState, spec: JobSpec, job_id: str, key: str, results: list[Any]
) -> None:
    client, prefix = state.store.client, state.settings.prefix
    _until_redis_answers(
        lambda: account_unit(client, prefix, spec.config, job_id, key, results),
        deadline=time.monotonic() + state.settings.unit_deadline,
    )


@app.task(name=TASK_NAME, bind=True, acks_late=True)
def run_unit_task(
    self: Task,
    job_id: str,
    question_index: int,
    answering_index: int,
    replicate: int,
    **labels: str,
) -> str:
    """Run one (question, answering model, replicate) unit of ``job_id``.

    ``labels`` (question id, answering model) are only there so that a person can
    find the task in Flower.

    Returns:
        ``"done"``, ``"already-done"``, ``"cancelled"``, ``"unknown-job"``,
        ``"over-budget"``, ``"quarantined"`` (not run: its earlier tries killed
        or froze their workers) or ``"failed"`` (its job was stopped by the
        breaker, see ``_breaker``).
    """
    state = _process_state()
    with state.unit_gate.shared():
        return _run_unit(state, job_id, (question_index, answering_index, replicate))


@app.task(name=BATCH_TASK_NAME, bind=True, acks_late=True)
def run_units_task(self: Task, job_id: str, positions: list[list[int]], **labels: str) -> str:
    """Run several units of ``job_id`` (``positions``: ``[question index,
    answering index, replicate]`` each) one after the other, as :func:`run_unit_task` runs one.

    The units are taken up ``VERIFLEET_UNITS_PER_STEP`` at a time, in the same
    round trip that writes the previous step's results (one Redis script per
    step instead of two per unit), unless the job has a budget or pricing:
    their checks run around each unit, so its units go one by one. A
    redelivered message skips the units done already; a unit whose earlier
    start never finished runs alone, as everywhere.

    Returns:
        How many units ended how, e.g. ``"done: 8"`` or ``"done: 3, already-done: 5"``;
        ``"unknown-job"`` or ``"cancelled"`` end the message early.
    """
    state = _process_state()
    spec = _job_spec(state, job_id, time.monotonic() + state.settings.unit_deadline)
    if spec is None:
        return "unknown-job"
    units = [(qi, ai, rep) for qi, ai, rep in positions]
    outcomes: Counter[str] = Counter()
    with state.unit_gate.shared():
        if spec.config.max_cost_usd is None and spec.config.pricing is None:
            _run_steps(state, spec, job_id, units, outcomes)
        else:
            for position in units:
                outcome = _run_unit(state, job_id, position)
                outcomes[outcome] += 1
                if outcome in ("unknown-job", "cancelled", FAILED):
                    break
    return ", ".join(f"{k}: {n}" for k, n in outcomes.items())


def _run_steps(
    state: _ProcessState,
    spec: JobSpec,
    job_id: str,
    positions: list[tuple[int, int, int]],
    outcomes: Counter[str],
) -> None:
    """Run a message's units a step at a time (see :func:`run_units_task`),
    counting how each ended in ``outcomes``. Every finished unit's results are
    written before this returns, also when a unit raises."""
    step = state.settings.units_per_step
    carry: list[UnitWrite] = []
    try:
        for first in range(0, len(positions), step):
            units = [spec.unit_at(*p) for p in positions[first : first + step]]
            keys = [unit.key(job_id) for unit in units]
            deadline = time.monotonic() + state.settings.unit_deadline
            wanted = [(key, u.question.answer_template) for key, u in zip(keys, units, strict=True)]
            begun = _take_up(state, job_id, wanted, deadline, carry=carry)
            carry = []
            for unit, key, start in zip(units, keys, begun, strict=True):
                if isinstance(start, str):
                    outcomes[start] += 1
                    if start in ("unknown-job", "cancelled", FAILED):
                        return
                    continue
                if start and carry:
                    # A suspect's lone run may well end its process: what the
                    # step finished so far must not die with it.
                    _write_now(state, job_id, *carry)
                    carry = []
                outcome, written = _execute(state, spec, job_id, unit, key, start, defer=True)
                outcomes[outcome] += 1
                if written is not None:
                    carry.append(written)
    finally:
        if carry:
            _write_now(state, job_id, *carry)


def _write_now(state: _ProcessState, job_id: str, *written: UnitWrite) -> None:
    """Write units' results; the write gets its own deadline: the units' work
    is done and must not be lost."""
    _until_redis_answers(
        lambda: state.store.step_units(job_id, written, []),
        deadline=time.monotonic() + state.settings.unit_deadline,
    )


def _run_unit(state: _ProcessState, job_id: str, position: tuple[int, int, int]) -> str:
    """Run one unit on its own: taken up, run, written (and accounted) in
    round trips of its own. Returns what the task returns for it."""
    deadline = time.monotonic() + state.settings.unit_deadline
    spec = _job_spec(state, job_id, deadline)
    if spec is None:
        return "unknown-job"
    unit = spec.unit_at(*position)
    key = unit.key(job_id)
    if not _admitted(state, spec, job_id, key, deadline):
        return "over-budget"
    (begun,) = _take_up(state, job_id, [(key, unit.question.answer_template)], deadline)
    if isinstance(begun, str):
        return begun
    outcome, _ = _execute(state, spec, job_id, unit, key, begun, defer=False)
    return outcome


def _execute(
    state: _ProcessState,
    spec: JobSpec,
    job_id: str,
    unit: Unit,
    key: str,
    suspect: bool,
    *,
    defer: bool,
) -> tuple[str, UnitWrite | None]:
    """Run a unit that was taken up: what the task returns for it and, with
    ``defer``, its results still to be written (with the next step); without,
    they are written and accounted here."""
    store = state.store
    deferred: UnitWrite | None = None

    def work(deadline: float) -> str:
        nonlocal deferred
        fault_for_tests(unit.question.id)
        # Descriptions primed for this job count inside this block only.
        with state.resources.sandbox.scoped(job_id):
            if spec.config.reverify_of:
                results = _until_redis_answers(
                    lambda: reverify_fleet_unit(
                        store, state.jobs, spec, unit, resources=state.resources, deadline=deadline
                    ),
                    deadline=deadline,
                )
            else:
                results = run_unit(unit, spec, state.resources, deadline=deadline)
        written = UnitWrite(key, results, spec.result_keys(unit, job_id))
        if defer:
            deferred = written
            return "done"
        _write_now(state, job_id, written)
        _account(state, spec, job_id, key, results)
        return "done"

    started = time.monotonic()
    outcome = guarded(
        state.store,
        state.unit_gate,
        state.settings,
        job_id,
        key,
        suspect,
        started + state.settings.unit_deadline,
        work,
        lambda error: _quarantine(state, job_id, key, unit, spec, error),
    )
    if outcome == "done":  # what the feeder packs messages by (see _unit_times)
        state.unit_times.record(job_id, time.monotonic() - started)
    return outcome, deferred


def _quarantine(
    state: _ProcessState, job_id: str, key: str, unit: Unit, spec: JobSpec, error: str
) -> None:
    """Store the errored results (``error``) of a unit that is not run again
    (see :mod:`._quarantine` and :mod:`._breaker`)."""
    config = spec.config
    results = failed_results(
        unit.question,
        unit.answering,
        config.parsing_models,
        config,
        replicate=unit.replicate,
        error=error,
    )
    _write_now(state, job_id, UnitWrite(key, results, spec.result_keys(unit, job_id)))


@app.task(name=SCENARIO_TASK_NAME, bind=True, acks_late=True)
def run_scenario_task(
    self: Task,
    job_id: str,
    scenario_index: int,
    answering_index: int,
    replicate: int,
    **labels: str,
) -> str:
    """Run one (scenario, answering model, replicate) unit of ``job_id``: every
    turn, then store the run and its turn results in one atomic write.

    Nothing is stored before the last turn, so a worker killed mid-scenario
    leaves nothing behind; the redelivered task runs the scenario from its
    first turn, and a task that finds the unit done (or loses the race to
    store it) adds nothing.

    Returns:
        ``"done"``, ``"already-done"``, ``"cancelled"``, ``"unknown-job"``,
        ``"over-budget"``, ``"quarantined"`` or ``"failed"`` (its job was
        stopped by the breaker, see ``_breaker``).
    """
    state = _process_state()
    with state.unit_gate.shared():
        return _run_scenario(state, job_id, scenario_index, answering_index, replicate)


def _run_scenario(
    state: _ProcessState, job_id: str, scenario_index: int, answering_index: int, replicate: int
) -> str:
    store, settings = state.store, state.settings
    deadline = time.monotonic() + settings.unit_deadline
    spec = _job_spec(state, job_id, deadline)
    if spec is None:
        return "unknown-job"
    unit = spec.scenario_unit_at(scenario_index, answering_index, replicate)
    key = unit.key(job_id)
    if not _admitted(state, spec, job_id, key, deadline):
        return "over-budget"
    (begun,) = _take_up(state, job_id, [(key, None)], deadline)
    if isinstance(begun, str):
        return begun

    def quarantine(error: str) -> None:
        failed = ScenarioExecutionResult(
            scenario_id=unit.scenario.id,
            status="error",
            terminal_failure=ScenarioTerminalFailure(stage="execution", reason=error),
            answering_model=unit.answering.identity().display_string,
            replicate=replicate,
            run_name=spec.config.run_name,
            unit_key=unit.key(),
        )
        _until_redis_answers(
            lambda: store.write_scenario_unit(job_id, key, failed, [], []),
            deadline=time.monotonic() + settings.unit_deadline,
        )

    def work(deadline: float) -> str:
        with state.resources.sandbox.scoped(job_id):
            if spec.config.reverify_of:
                run = _until_redis_answers(
                    lambda: reverify_fleet_scenario(
                        store, spec, unit, resources=state.resources, deadline=deadline
                    ),
                    deadline=deadline,
                )
            else:
                run = run_scenario_unit(unit, spec, state.resources, deadline=deadline)
        outcome = run.scenario_result
        assert outcome is not None  # run_scenario_unit always sets it
        keys = scenario_result_keys(run.results, job_id=job_id)
        _until_redis_answers(
            lambda: store.write_scenario_unit(job_id, key, outcome, run.results, keys),
            deadline=time.monotonic() + settings.unit_deadline,
        )
        _account(state, spec, job_id, key, run.results)
        return "done"

    return guarded(
        state.store, state.unit_gate, state.settings, job_id, key, begun, deadline, work, quarantine
    )
