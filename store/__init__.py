"""verifleet.store — the fleet protocol and the job and result store on Redis.

Everything the submitting side and the workers must agree on lives here and
nowhere else: the key layout, unit references and their deterministic keys, the
task names and queue, the Celery apps and sending tasks through the broker,
worker liveness, the endpoint-limit records, and the store itself. It imports only
:mod:`verifleet.schemas` (checked by the import contract in ``pyproject.toml``),
so both sides can import it without pulling in each other's code.

Shared by the orchestrator (submit, watch, collect) and the workers (load a job's
spec, write results). Keys carry the prefix ``vf:`` and the job id; results are
written once under their deterministic key and stored zstd-compressed; progress is
counted from sets of keys, never from counters a redelivered task would bump twice.
"""

from __future__ import annotations

import typing

from verifleet import _lazy

if typing.TYPE_CHECKING:
    from ._celery import CLIENT_SETTINGS, celery_app, client_app
    from ._call_cache import DEFAULT_CACHE_MAX_ENTRIES, DEFAULT_CACHE_TTL_SECONDS, RedisCallCache
    from ._keys import MAX_JOB_ID_LENGTH, JobKeys, RewardJobKeys, job_id_problem, job_id_taken
    from ._ledger import CostLedger, JobCost
    from ._liveness import Liveness
    from ._lock import TokenLock
    from ._protocol import (
        BATCH_TASK_NAME,
        DEFAULT_QUEUE,
        REWARD_TASK_NAME,
        SCENARIO_TASK_NAME,
        TASK_NAME,
        TASK_NAMES,
        RolloutRef,
        UnitBatchRef,
        UnitRef,
    )
    from ._redis_url import TLS_ENV, RedisAccessError, RedisTarget, mask_password, redis_client
    from ._feeding import QueueFeeder
    from ._schedule import Schedule, unit_ref_at
    from ._sending import Broker, send_units
    from ._progress import UnitWrite
    from ._store import JobProgress, JobStatus, ResultStore, UnfinishedJob, UnitStart
    from ._units import (
        ScenarioUnit,
        Unit,
        count_units,
        expand_scenario_units,
        expand_units,
        keyed_question_id,
        result_key,
        scenario_result_keys,
        unit_messages,
    )

# name -> the submodule that defines it, loaded on first use: a local run needs
# the result keys, not redis or Celery
_LAZY: dict[str, str] = {
    "CLIENT_SETTINGS": "._celery",
    "celery_app": "._celery",
    "client_app": "._celery",
    "DEFAULT_CACHE_MAX_ENTRIES": "._call_cache",
    "DEFAULT_CACHE_TTL_SECONDS": "._call_cache",
    "RedisCallCache": "._call_cache",
    "MAX_JOB_ID_LENGTH": "._keys",
    "JobKeys": "._keys",
    "RewardJobKeys": "._keys",
    "job_id_problem": "._keys",
    "job_id_taken": "._keys",
    "CostLedger": "._ledger",
    "JobCost": "._ledger",
    "Liveness": "._liveness",
    "BATCH_TASK_NAME": "._protocol",
    "DEFAULT_QUEUE": "._protocol",
    "REWARD_TASK_NAME": "._protocol",
    "RolloutRef": "._protocol",
    "SCENARIO_TASK_NAME": "._protocol",
    "TASK_NAME": "._protocol",
    "TASK_NAMES": "._protocol",
    "UnitBatchRef": "._protocol",
    "UnitRef": "._protocol",
    "TLS_ENV": "._redis_url",
    "RedisAccessError": "._redis_url",
    "RedisTarget": "._redis_url",
    "mask_password": "._redis_url",
    "redis_client": "._redis_url",
    "QueueFeeder": "._feeding",
    "Schedule": "._schedule",
    "unit_ref_at": "._schedule",
    "Broker": "._sending",
    "send_units": "._sending",
    "UnitWrite": "._progress",
    "JobProgress": "._store",
    "JobStatus": "._store",
    "ResultStore": "._store",
    "UnfinishedJob": "._store",
    "UnitStart": "._store",
    "ScenarioUnit": "._units",
    "Unit": "._units",
    "count_units": "._units",
    "expand_scenario_units": "._units",
    "expand_units": "._units",
    "keyed_question_id": "._units",
    "result_key": "._units",
    "scenario_result_keys": "._units",
    "unit_messages": "._units",
    "TokenLock": "._lock",
}

__all__ = [
    "BATCH_TASK_NAME",
    "CLIENT_SETTINGS",
    "DEFAULT_CACHE_MAX_ENTRIES",
    "DEFAULT_CACHE_TTL_SECONDS",
    "DEFAULT_QUEUE",
    "MAX_JOB_ID_LENGTH",
    "REWARD_TASK_NAME",
    "SCENARIO_TASK_NAME",
    "TASK_NAME",
    "TASK_NAMES",
    "TLS_ENV",
    "Broker",
    "CostLedger",
    "JobCost",
    "JobKeys",
    "JobProgress",
    "JobStatus",
    "Liveness",
    "QueueFeeder",
    "RedisAccessError",
    "RedisCallCache",
    "RedisTarget",
    "ResultStore",
    "RewardJobKeys",
    "RolloutRef",
    "ScenarioUnit",
    "Schedule",
    "TokenLock",
    "UnfinishedJob",
    "Unit",
    "UnitBatchRef",
    "UnitRef",
    "UnitStart",
    "UnitWrite",
    "celery_app",
    "client_app",
    "count_units",
    "expand_scenario_units",
    "expand_units",
    "job_id_problem",
    "job_id_taken",
    "keyed_question_id",
    "mask_password",
    "redis_client",
    "result_key",
    "scenario_result_keys",
    "send_units",
    "unit_messages",
    "unit_ref_at",
]


__getattr__, __dir__ = _lazy.exports(__name__, _LAZY)
