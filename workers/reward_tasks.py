"""The task that scores one stored rollout of a reward job (``verifleet reward
--redis``).

It runs the very :class:`~verifleet.reward.RewardScorer` the local
mode and the service use, so a rollout gets the same reward on the fleet as in
one process. Judge calls go through the fleet's model-call cache in Redis and
the fleet-wide endpoint limiter. The verdict is written once (``HSETNX``): a task
delivered twice stores nothing new. This module imports the reward package's
scoring core (not its service or CLI); it is registered in ``app.py``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict

import zstandard
from pydantic import TypeAdapter, ValidationError

from verifleet.limits import RedisCallGate
from verifleet.pipeline import PipelineResources
from verifleet.reward import (
    InvalidRequestError,
    PlainVerifyRequest,
    ResponsesVerifyRequest,
    RewardScorer,
    VerifyRequest,
    load_reward_job,
    reward_resources,
)
from verifleet.sandbox import default_pool
from verifleet.store import REWARD_TASK_NAME, RedisCallCache, ResultStore, RewardJobKeys

from ._settings import WorkerSettings
from .app import app
from .tasks import _until_redis_answers, worker_store

__all__ = ["score_rollout_task"]

log = logging.getLogger(__name__)

_REQUEST: TypeAdapter[ResponsesVerifyRequest | PlainVerifyRequest] = TypeAdapter(VerifyRequest)
_lock = threading.Lock()
_scorers: OrderedDict[str, RewardScorer] = OrderedDict()
_shared: dict[str, object] = {}
_MAX_JOBS = 8


def _resources(settings: WorkerSettings, store: ResultStore) -> PipelineResources:
    # Built once per process: every job's scorer shares the clients and the cache.
    if "resources" not in _shared:
        gate = RedisCallGate(
            store.client,
            lease_seconds=settings.lease_seconds,
            max_wait=settings.unit_deadline,
            prefix=settings.prefix,
        )
        cache = RedisCallCache(store.client, prefix=settings.prefix)
        _shared["resources"] = reward_resources(cache, call_gate=gate)
    resources = _shared["resources"]
    assert isinstance(resources, PipelineResources)
    return resources


def _state(job_id: str) -> tuple[ResultStore, RewardScorer]:
    with _lock:
        settings: WorkerSettings = app.conf.verifleet_settings
        if "store" not in _shared:
            _shared["store"] = worker_store(settings)
        store = _shared["store"]
        assert isinstance(store, ResultStore)
        scorer = _scorers.get(job_id)
        if scorer is None:
            spec = load_reward_job(store.client, job_id, prefix=settings.prefix)
            scorer = RewardScorer(
                spec.benchmark,
                spec.parsing_models,
                spec.reward_config,
                resources=_resources(settings, store),
            )
            _scorers[job_id] = scorer
            while len(_scorers) > _MAX_JOBS:
                _scorers.popitem(last=False)
        _scorers.move_to_end(job_id)
        return store, scorer


@app.task(name=REWARD_TASK_NAME, acks_late=True)
def score_rollout_task(job_id: str, key: str) -> str:
    """Score rollout ``key`` of reward job ``job_id`` and store its verdict fields.

    Redis being unreachable is waited out inside the task until the unit
    deadline, as for units (see ``tasks.py``); the message stays unacked meanwhile.

    Returns:
        ``"done"``, ``"already-done"`` or ``"missing"`` (the rollout is not stored).

    Raises:
        redis.RedisError: Redis still unreachable at the deadline.
        KeyError: the reward job's spec is not in Redis.
    """
    settings: WorkerSettings = app.conf.verifleet_settings
    deadline = time.monotonic() + settings.unit_deadline
    store, scorer = _until_redis_answers(lambda: _state(job_id), deadline=deadline)
    keys = RewardJobKeys(job_id, settings.prefix)
    client = store.client
    if _until_redis_answers(lambda: client.hexists(keys.scores, key), deadline=deadline):
        return "already-done"
    blob = _until_redis_answers(lambda: client.hget(keys.rollouts, key), deadline=deadline)
    if not isinstance(blob, bytes):
        log.warning("reward job %s: rollout %s is not stored", job_id, key)
        return "missing"
    rollout = json.loads(zstandard.ZstdDecompressor().decompress(blob))
    try:
        request = _REQUEST.validate_python(rollout)
        # The job's own template processes, as a unit's: template code of one
        # reward job never shares a process with another job's (docs/security.md).
        with default_pool().scoped(job_id):
            fields = scorer.score(request, deadline=deadline).verdict_fields()
    except (InvalidRequestError, ValidationError) as exc:
        # The CLI validated the line; a worker with another benchmark version
        # may still disagree, and the CLI then reports this line as malformed.
        fields = {"invalid_request": str(exc)}
    payload = json.dumps(fields, ensure_ascii=False)
    # Writing gets its own deadline: the verdict is computed and must not be lost.
    _until_redis_answers(
        lambda: client.hsetnx(keys.scores, key, payload),
        deadline=time.monotonic() + settings.unit_deadline,
    )
    return "done"
