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


# Each name of __all__ loads on first use, from the module the TYPE_CHECKING block
# imports it from: a local run needs the result keys, not redis or Celery.
__getattr__, __dir__ = _lazy.exports(__name__)
