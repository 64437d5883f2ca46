"""The task that runs one unit through the pipeline and stores its results.

Content errors never leave the pipeline (they are inside the results). Redis
being unreachable (a restart, a failover) is retried *inside* the task until the
unit deadline: Celery's own ``autoretry`` republishes the task through the very
broker that is down, and when that publish fails Celery rejects the message
without requeueing it — measured here, a Redis restart mid-job lost two units
that way. The task's message stays unacked in Redis meanwhile, so even a worker
that dies during the outage loses nothing. A redelivered task finds its unit
done and returns at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import redis
from celery import Task

from verifleet.orchestrator.store import (
    TASK_NAME,
    JobStatus,
    ResultStore,
    Unit,
    unit_key,
    unit_result_keys,
)
from verifleet.pipeline import PipelineResources, run_unit

from ._jobs import JobCache
from ._limiter import RedisCallGate
from ._settings import WorkerSettings
from .app import app

__all__ = ["run_unit_task"]

log = logging.getLogger(__name__)
T = TypeVar("T")

_state_lock = threading.Lock()
_state: dict[str, object] = {}


def _process_state() -> tuple[ResultStore, JobCache, PipelineResources, WorkerSettings]:
    # Built lazily once per worker process: the store's connection pool, the job
    # spec cache and the pipeline's client/template/embedding caches.
    with _state_lock:
        if not _state:
            settings: WorkerSettings = app.conf.verifleet_settings
            store = ResultStore.from_url(settings.redis_url, prefix=settings.prefix)
            gate = RedisCallGate(
                store.client,
                lease_seconds=settings.lease_seconds,
                max_wait=settings.unit_deadline,
                prefix=settings.prefix,
            )
            _state.update(
                settings=settings,
                store=store,
                jobs=JobCache(store),
                resources=PipelineResources(call_gate=gate),
            )
        return (
            _state["store"],  # type: ignore[return-value]
            _state["jobs"],
            _state["resources"],
            _state["settings"],
        )


_REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError)


def _until_redis_answers(fn: Callable[[], T], *, deadline: float) -> T:
    """Call ``fn``; while Redis is unreachable, wait (0.5 s doubling to 5 s) and
    call again until ``deadline`` (monotonic), then let the error out."""
    delay = 0.5
    while True:
        try:
            return fn()
        except _REDIS_DOWN as exc:
            if time.monotonic() + delay > deadline:
                raise
            log.warning("redis unreachable (%s); retrying in %.1fs", exc, delay)
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


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
        ``"done"``, ``"already-done"``, ``"cancelled"`` or ``"unknown-job"``.
    """
    store, jobs, resources, settings = _process_state()
    deadline = time.monotonic() + settings.unit_deadline
    status = _until_redis_answers(lambda: store.status(job_id), deadline=deadline)
    if status is None:
        log.warning("task for unknown job %s dropped", job_id)
        return "unknown-job"
    if status == JobStatus.CANCELLED:
        return "cancelled"
    spec = _until_redis_answers(lambda: jobs.get(job_id), deadline=deadline)
    unit = Unit(
        question=spec.benchmark.questions[question_index],
        answering=spec.config.answering_models[answering_index],
        replicate=replicate,
    )
    key = unit_key(unit, job_id=job_id)
    if _until_redis_answers(lambda: store.unit_done(job_id, key), deadline=deadline):
        return "already-done"
    _until_redis_answers(lambda: store.mark_started(job_id, key), deadline=deadline)
    results = run_unit(
        unit.question,
        unit.answering,
        spec.config.parsing_models,
        spec.config,
        replicate=replicate,
        rubric=spec.benchmark.rubric_for(unit.question),
        resources=resources,
        deadline=deadline,
    )
    keys = unit_result_keys(unit, spec.config.parsing_models, job_id=job_id)
    # Writing gets its own deadline: the unit's work is done and must not be lost.
    _until_redis_answers(
        lambda: store.write_unit(job_id, key, results, keys),
        deadline=time.monotonic() + settings.unit_deadline,
    )
    return "done"
