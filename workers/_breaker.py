"""The per-job breaker: a job whose units keep killing or freezing worker
processes is stopped before other tenants lose more throughput.

Quarantine (:mod:`._quarantine`) bounds what one unit costs the fleet; a job of
many poison units would still cost ``unit_tries`` worker processes per unit. The
breaker counts, per job, the worker processes its units killed or froze in
*lone* runs (a suspect unit runs alone in its process, so a death then is the
unit's own doing; a unit that merely shared a process with another job's poison
unit never counts against its job). Once a job reaches ``VERIFLEET_JOB_KILLS``
such deaths (default 3), it is marked ``failed`` with an error that says so
(``verifleet status``, ``jobs``, ``watch`` and ``results`` show it); the unit
that tripped it stores errored results carrying the same error, and workers drop
the job's other units as they would a cancelled job's. ``verifleet resume``
starts a failed job again; its count stays, so its next lone death fails it again.

A death is known when its unit comes back: each lone start after the unit's
first lone start means the previous one never finished.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import redis

from verifleet.store import ResultStore

from ._isolation import UnitGate
from ._quarantine import QUARANTINED, quarantine_error
from ._settings import WorkerSettings

__all__ = ["FAILED", "breaker_error", "guarded", "until_redis_answers"]

log = logging.getLogger("verifleet.workers.tasks")

T = TypeVar("T")

#: What the task returns for a unit of a failed job (or the unit that failed it).
FAILED = "failed"

_REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError)


def until_redis_answers(fn: Callable[[], T], *, deadline: float) -> T:
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


def guarded(
    store: ResultStore,
    gate: UnitGate,
    settings: WorkerSettings,
    job_id: str,
    key: str,
    suspect: bool,
    deadline: float,
    work: Callable[[float], str],
    stop: Callable[[str], None],
) -> str:
    """Run ``work(deadline)`` and return what it returns.

    A suspect unit (an earlier start never finished) runs alone in this process
    with a deadline of its own instead. Before it runs, each earlier lone run of
    it (which never finished: its process died or froze) counts against its job
    (:meth:`ResultStore.count_job_kill`); a job at ``settings.job_kills`` is
    failed (:meth:`ResultStore.fail_job`) and the unit is not run:
    ``stop(error)`` stores its errored results and :data:`FAILED` is returned.
    A unit that used its ``settings.unit_tries`` is quarantined the same way
    (:data:`~._quarantine.QUARANTINED`).

    Raises:
        redis.RedisError: Redis stayed unreachable past the deadline.
    """
    if not suspect:
        return work(deadline)
    with gate.alone():
        deadline = time.monotonic() + settings.unit_deadline
        lone = until_redis_answers(lambda: store.begin_lone_run(job_id, key), deadline=deadline)
        if lone >= 1:
            kills = until_redis_answers(lambda: store.count_job_kill(job_id), deadline=deadline)
            if kills >= settings.job_kills:
                error = breaker_error(kills, settings.job_kills)
                if until_redis_answers(lambda: store.fail_job(job_id, error), deadline=deadline):
                    log.warning(
                        "job %s failed: %d worker processes killed or frozen", job_id, kills
                    )
                stop(error)
                return FAILED
        if lone + 1 >= settings.unit_tries:
            log.warning("unit %s of job %s quarantined after %d tries", key, job_id, lone + 1)
            stop(quarantine_error(lone + 1))
            return QUARANTINED
        return work(deadline)


def breaker_error(kills: int, limit: int) -> str:
    """The job's error (and the tripping unit's ``metadata.error``)."""
    return (
        f"job stopped by the fleet: its units killed or froze the worker process running "
        f"them {kills} times, each while running alone in that process (so the unit itself "
        f"was the cause); the limit is {limit} (VERIFLEET_JOB_KILLS). Its remaining units "
        "are not run; fix the benchmark and submit it again, or `verifleet resume` it"
    )
