"""Scoring rollouts on the fleet: the Redis layout the CLI and the workers share,
and the CLI side that submits rollouts and collects their verdicts.

A reward job is content-addressed: its id hashes the benchmark, the judges and the
reward config, and each rollout is stored under a hash of its JSON. A task
carries only ``(job id, rollout key)`` (keys, not payloads: the benchmark is stored once); the worker
scores the rollout with the same :class:`RewardScorer` the local mode uses and
writes the verdict fields once (``HSETNX``). Re-running resumes: verdicts
already in Redis are collected without sending a task again.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import redis
import zstandard

from verifleet.schemas import Benchmark, ModelConfig, VerifleetError
from verifleet.store import DEFAULT_QUEUE, Broker, RewardJobKeys, RolloutRef, redis_client

from ._config import RewardConfig
from ._request import InvalidRequestError
from ._rollouts import (
    LineError,
    RolloutReport,
    RolloutWriter,
    done_lines,
    ignore_line_error,
    iter_lines,
    parse_rollout,
    scored_line,
)
from ._scorer import RewardScorer

__all__ = [
    "FleetStalledError",
    "RewardJobSpec",
    "load_reward_job",
    "reward_job_id",
    "rollout_key",
    "score_rollouts_fleet",
    "store_reward_job",
]

_INVALID = "invalid_request"


class FleetStalledError(VerifleetError, TimeoutError):
    """No verdict arrived from the fleet for the stall timeout (no worker running?)."""


@dataclass(frozen=True)
class RewardJobSpec:
    """What a worker needs to score a job's rollouts."""

    benchmark: Benchmark
    parsing_models: list[ModelConfig]
    reward_config: RewardConfig


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def reward_job_id(
    benchmark: Benchmark, parsing_models: Sequence[ModelConfig], reward_config: RewardConfig
) -> str:
    """A content hash: the same benchmark, judges and config give the same job."""
    payload = _canonical(
        {
            "benchmark": benchmark.model_dump(mode="json"),
            "parsing": [m.model_dump(mode="json") for m in parsing_models],
            "reward": reward_config.model_dump(mode="json"),
        }
    )
    return "reward-" + hashlib.sha256(payload.encode()).hexdigest()[:24]


def rollout_key(rollout: dict[str, object]) -> str:
    """A hash of the rollout's JSON: identical rollouts share one verdict."""
    return hashlib.sha256(_canonical(rollout).encode()).hexdigest()[:32]


def store_reward_job(
    client: redis.Redis,
    benchmark: Benchmark,
    parsing_models: Sequence[ModelConfig],
    reward_config: RewardConfig,
    *,
    prefix: str = "vf",
) -> str:
    """Store the job's spec once (idempotent); return the job id."""
    job_id = reward_job_id(benchmark, parsing_models, reward_config)
    keys = RewardJobKeys(job_id, prefix)
    zc = zstandard.ZstdCompressor()
    parsing = json.dumps([m.model_dump(mode="json") for m in parsing_models])
    client.hset(
        keys.spec,
        mapping={
            "benchmark": zc.compress(benchmark.model_dump_json().encode()),
            "parsing": zc.compress(parsing.encode()),
            "reward": zc.compress(reward_config.model_dump_json().encode()),
        },
    )
    return job_id


def load_reward_job(client: redis.Redis, job_id: str, *, prefix: str = "vf") -> RewardJobSpec:
    """The stored spec of ``job_id``.

    Raises:
        KeyError: no such reward job.
    """
    keys = RewardJobKeys(job_id, prefix)
    blobs = client.hmget(keys.spec, ["benchmark", "parsing", "reward"])
    zd = zstandard.ZstdDecompressor()
    texts = [zd.decompress(b).decode() for b in blobs if isinstance(b, bytes)]
    if len(texts) != 3:
        raise KeyError(f"no reward job {job_id!r} in the store")
    benchmark, parsing, reward = texts
    return RewardJobSpec(
        benchmark=Benchmark.model_validate_json(benchmark),
        parsing_models=[ModelConfig.model_validate(m) for m in json.loads(parsing)],
        reward_config=RewardConfig.model_validate_json(reward),
    )


@dataclass
class _Pending:
    line: int
    key: str
    rollout: dict[str, object]


def score_rollouts_fleet(
    path: Path,
    out: Path,
    scorer: RewardScorer,
    redis_url: str,
    *,
    prefix: str = "vf",
    queue: str = DEFAULT_QUEUE,
    window: int = 1000,
    batch_size: int = 200,
    poll: float = 0.2,
    stall_timeout: float = 600.0,
    ttl_seconds: int = 7 * 24 * 3600,
    on_error: Callable[[LineError], None] = ignore_line_error,
) -> RolloutReport:
    """Score the rollouts of ``path`` on the fleet's workers; output as local mode.

    Lines are validated here (the same checks as local mode), stored in Redis and
    sent as tasks; verdicts are written to ``out`` in input order as they
    arrive, with at most ``window`` rollouts outstanding; rollouts are stored,
    sent and collected ``batch_size`` per Redis round trip. The job's keys expire
    ``ttl_seconds`` after the last run that touched them.

    Raises:
        FleetStalledError: no verdict arrived for ``stall_timeout`` seconds (no
            worker running?); rerunning resumes where it stopped.
        redis.RedisError: Redis is unreachable.
        OSError: a file cannot be read or written.
    """
    client = redis_client(redis_url)
    job_id = store_reward_job(
        client, scorer.benchmark, scorer.parsing_models, scorer.reward_config, prefix=prefix
    )
    keys = RewardJobKeys(job_id, prefix)
    zc = zstandard.ZstdCompressor()
    report = RolloutReport()
    done = done_lines(out)
    writer = RolloutWriter(out, report, on_error)
    broker = Broker(redis_url, queue=queue)
    pending: deque[_Pending] = deque()
    last_progress = time.monotonic()

    def drain(*, until: int) -> None:
        """Write every verdict ready at the head; wait while more than ``until``
        rollouts are outstanding."""
        nonlocal last_progress
        while pending:
            head = [p.key for p in itertools.islice(pending, batch_size)]
            verdicts = client.hmget(keys.scores, head)
            for raw in verdicts:
                if raw is None:
                    break
                item = pending.popleft()
                fields = json.loads(raw)
                if _INVALID in fields:
                    writer.error(item.line, str(fields[_INVALID]))
                else:
                    writer.write(scored_line(item.rollout, fields, item.line))
                last_progress = time.monotonic()
            if verdicts[0] is not None:
                continue
            if len(pending) <= until:
                return
            if time.monotonic() - last_progress > stall_timeout:
                raise FleetStalledError(
                    f"no verdict from the fleet for {stall_timeout:.0f}s "
                    f"(job {job_id}, {len(pending)} rollouts outstanding): are workers running?"
                )
            time.sleep(poll)

    def submit(batch: list[_Pending]) -> None:
        """Store a batch of rollouts and send tasks for those without a verdict,
        in two round trips."""
        pipe = client.pipeline(transaction=False)
        for item in batch:
            pipe.hsetnx(keys.rollouts, item.key, zc.compress(_canonical(item.rollout).encode()))
        pipe.hmget(keys.scores, [item.key for item in batch])
        *_, verdicts = pipe.execute()
        broker.send(
            (
                (RolloutRef(job_id=job_id, key=item.key), {})
                for item, verdict in zip(batch, verdicts, strict=True)
                if verdict is None
            ),
            batch_size=batch_size,
        )
        pending.extend(batch)
        batch.clear()

    try:
        batch: list[_Pending] = []
        for number, text in iter_lines(path):
            if number in done:
                report.already_done += 1
                continue
            try:
                rollout, _request = parse_rollout(text, scorer)
            except InvalidRequestError as exc:
                writer.error(number, str(exc))
                continue
            batch.append(_Pending(number, rollout_key(rollout), rollout))
            if len(batch) >= batch_size:
                submit(batch)
                drain(until=window)
        if batch:
            submit(batch)
        drain(until=0)
    finally:
        for key in (keys.spec, keys.rollouts, keys.scores):
            client.expire(key, ttl_seconds)
        broker.close()
        writer.close()
        client.close()
    return report
