"""The job and result store on Redis.

Writes are idempotent by construction: a result goes in with ``HSETNX`` under its
deterministic key, a finished unit is a member of a set, pass/fail verdicts are
set members too. A task that runs twice (a redelivery after a worker died, or a
resume racing a slow worker) therefore overwrites nothing and counts nothing
twice; every count is a cardinality (``HLEN``/``SCARD``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import redis
import zstandard

from verifleet.errors import JobRejectedError
from verifleet.schemas import VerificationResult

from ._keys import JOBS_INDEX, JobKeys, job_id_problem, job_id_taken
from ._progress import (
    JobProgress,
    JobStatus,
    PairProgress,
    UnfinishedJob,
    UnitStart,
)
from ._protocol import DEFAULT_QUEUE
from ._redis_url import RedisTarget
from ._replies import reply_text
from ._schedule import Schedule
from ._scripts import READ_PROGRESS, RECORD_SHARD, UNITS_STEP, WRITE_SCENARIO
from ._unit_writes import UnitWrites

__all__ = [
    "JobProgress",
    "JobStatus",
    "PairProgress",
    "ResultStore",
    "UnfinishedJob",
    "UnitStart",
]

_ZSTD_LEVEL = 3


class _Codecs(threading.local):
    """One zstd compressor and decompressor per thread.

    zstandard's contexts are not thread-safe: a worker's threads pool sharing one
    compressor produced corrupt blobs ("Dictionary is corrupted" on read) and
    could crash the process. A context per thread keeps the reuse (building one
    costs more than compressing a result) without sharing.
    """

    def __init__(self) -> None:
        self.compressor = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
        self.decompressor = zstandard.ZstdDecompressor()


class ResultStore(UnitWrites):
    """Jobs, their specs and their results on one Redis server.

    Args:
        client: A ``redis.Redis`` client (bytes responses).
        prefix: Key prefix; tests use their own.

    Raises:
        redis.RedisError: Redis is unreachable; callers treat this as an
            infrastructure error (workers let Celery retry the task).
    """

    def __init__(self, client: redis.Redis, *, prefix: str = "vf") -> None:
        self.client = client
        self.prefix = prefix
        self._codecs = _Codecs()
        self._units_step = client.register_script(UNITS_STEP)
        self._write_scenario = client.register_script(WRITE_SCENARIO)
        self._record_shard = client.register_script(RECORD_SHARD)
        self._read_progress = client.register_script(READ_PROGRESS)
        self.schedule = Schedule(client, prefix=prefix)

    def _compress(self, data: bytes) -> bytes:
        return self._codecs.compressor.compress(data)

    def _decompress(self, blob: bytes) -> bytes:
        return self._codecs.decompressor.decompress(blob)

    def decompress(self, blob: bytes) -> bytes:
        """A stored result blob as the result's JSON.

        Raises:
            zstandard.ZstdError: the blob is corrupt.
        """
        return self._decompress(blob)

    @classmethod
    def from_url(cls, url: str, *, prefix: str | None = None) -> ResultStore:
        """A store on the Redis server at ``url`` (password and ``rediss://`` TLS
        options as :class:`RedisTarget` resolves them); the prefix defaults to
        ``VERIFLEET_PREFIX`` (as the workers read it), else ``vf``.

        Raises:
            ConfigError: a malformed URL or TLS option (see :class:`RedisTarget`).
        """
        resolved = prefix or os.environ.get("VERIFLEET_PREFIX") or "vf"
        return cls(RedisTarget.parse(url).client(health_check_interval=30), prefix=resolved)

    def keys(self, job_id: str) -> JobKeys:
        """Key names of ``job_id``."""
        return JobKeys(job_id, prefix=self.prefix)

    def _index(self) -> str:
        return JOBS_INDEX if self.prefix == "vf" else f"{self.prefix}:jobs"

    # --- jobs -------------------------------------------------------------------------
    def create_job(
        self,
        job_id: str,
        *,
        benchmark_json: str,
        config_json: str,
        total_units: int,
        name: str = "",
        total_scenarios: int = 0,
        templates: Mapping[str, str] | None = None,
        queue: str = DEFAULT_QUEUE,
        weight: float = 1.0,
        scheduled: bool = False,
        sendable: int | None = None,
        results_to: str | None = None,
    ) -> None:
        """Store a job's spec once and register it (status ``queued``).
        ``total_units`` counts scenario units too; ``total_scenarios`` only those;
        ``templates`` are the descriptions of the job's templates by template id,
        as JSON text (see :meth:`begin_unit`). A ``scheduled`` job sends no
        message now: it is enrolled in ``queue``'s schedule, where the workers'
        feeders give out its units in proportion to ``weight``
        (:class:`~verifleet.store.Schedule`): the first ``sendable`` units
        (all by default; units stored at submission, a broken scenario's, are
        not sent). With ``results_to`` (a path or
        fsspec URL) its finished results are drained there as Parquet shards
        while it runs (``verifleet.orchestrator``'s drainer; see
        :meth:`record_shard`).

        Raises:
            JobRejectedError: ``job_id`` is malformed (:func:`job_id_problem`) or
                a job with it exists (claimed atomically: of two submissions of
                one id, one wins); nothing is stored then.
        """
        problem = job_id_problem(job_id)
        if problem:
            raise JobRejectedError([problem])
        keys = self.keys(job_id)
        now = datetime.now(UTC).isoformat(timespec="seconds")
        if not self.client.hsetnx(keys.meta, "created", now):
            raise JobRejectedError([job_id_taken(job_id)])
        pipe = self.client.pipeline(transaction=True)
        if templates:
            pipe.hset(
                keys.templates,
                mapping={
                    template_id: self._compress(description.encode())
                    for template_id, description in templates.items()
                },
            )
        pipe.hset(
            keys.spec,
            mapping={
                "benchmark": self._compress(benchmark_json.encode()),
                "config": self._compress(config_json.encode()),
            },
        )
        pipe.hset(
            keys.meta,
            mapping={
                "status": JobStatus.QUEUED.value,
                "created": now,
                "total_units": total_units,
                "total_scenarios": total_scenarios,
                "name": name,
                "queue": queue,
                "weight": weight,
                **(
                    {"cursor": 0, "sendable": total_units if sendable is None else sendable}
                    if scheduled
                    else {}
                ),
                **({"results_to": results_to} if results_to else {}),
            },
        )
        pipe.zadd(self._index(), {job_id: time.time()})
        pipe.execute()
        if scheduled:
            self.schedule.enroll(job_id, queue)

    def set_ttl(self, job_id: str, seconds: float) -> None:
        """Let :meth:`expired_jobs` report the job ``seconds`` after it finished
        (or, if it never finishes, after it was created)."""
        self.client.hset(self.keys(job_id).meta, "ttl", str(float(seconds)))

    def expired_jobs(self, *, now: float | None = None, limit: int = 10_000) -> list[str]:
        """Ids of the jobs with a TTL (:meth:`set_ttl`) that has run out, among the
        newest ``limit``: done or cancelled jobs counted from when they finished,
        others from when they were created."""
        now = time.time() if now is None else now
        ids = [reply_text(i) for i in self.client.zrevrange(self._index(), 0, limit - 1)]
        pipe = self.client.pipeline(transaction=False)
        for job_id in ids:
            pipe.hmget(self.keys(job_id).meta, ["ttl", "finished", "created"])
        expired = []
        for job_id, (ttl, finished, created) in zip(ids, pipe.execute(), strict=True):
            if ttl is None:
                continue
            since = reply_text(finished) if finished else reply_text(created) if created else ""
            if not since:
                continue
            if datetime.fromisoformat(since).timestamp() + float(reply_text(ttl)) <= now:
                expired.append(job_id)
        return expired

    def exists(self, job_id: str) -> bool:
        """True when ``job_id`` was submitted to this store."""
        return bool(self.client.exists(self.keys(job_id).meta))

    def load_spec(self, job_id: str) -> tuple[str, str]:
        """The job's benchmark and config JSON.

        Raises:
            KeyError: no such job.
        """
        benchmark, config = self.client.hmget(self.keys(job_id).spec, ["benchmark", "config"])
        if not isinstance(benchmark, bytes) or not isinstance(config, bytes):
            raise KeyError(f"no job {job_id!r} in the store")
        return self._decompress(benchmark).decode(), self._decompress(config).decode()

    def status(self, job_id: str) -> JobStatus | None:
        """The job's status, or None when it does not exist."""
        value = self.client.hget(self.keys(job_id).meta, "status")
        return JobStatus(reply_text(value)) if value is not None else None

    def set_status(self, job_id: str, status: JobStatus) -> None:
        """Set the job's status."""
        self.client.hset(self.keys(job_id).meta, "status", status.value)

    def list_jobs(self, limit: int = 50) -> list[JobProgress]:
        """The newest jobs first."""
        ids = self.client.zrevrange(self._index(), 0, limit - 1)
        return [self.progress(reply_text(i)) for i in ids]

    def unfinished_jobs(self, limit: int = 200) -> list[UnfinishedJob]:
        """The newest ``limit`` jobs that are queued or running and have units
        left, in one round trip."""
        ids = [reply_text(i) for i in self.client.zrevrange(self._index(), 0, limit - 1)]
        pipe = self.client.pipeline(transaction=False)
        for job_id in ids:
            keys = self.keys(job_id)
            pipe.hmget(keys.meta, ["status", "total_units", "queue", "cursor", "sendable"])
            pipe.scard(keys.done)
        replies = pipe.execute()
        unfinished: list[UnfinishedJob] = []
        for job_id, meta, done in zip(ids, replies[::2], replies[1::2], strict=True):
            status, total, queue, cursor, sendable = meta
            if status is None or reply_text(status) not in (JobStatus.QUEUED, JobStatus.RUNNING):
                continue
            if total is not None and int(done) < int(total):
                giving_out = cursor is not None and int(cursor) < int(sendable or total)
                name = reply_text(queue) if queue is not None else DEFAULT_QUEUE
                unfinished.append(UnfinishedJob(job_id, int(done), name, giving_out))
        return unfinished

    def given_out(self, job_id: str) -> tuple[int | None, str]:
        """How many units of a scheduled job its schedule has given out (None for
        a job whose units were all sent at submission), and the job's queue."""
        cursor, queue = self.client.hmget(self.keys(job_id).meta, ["cursor", "queue"])
        name = reply_text(queue) if queue is not None else DEFAULT_QUEUE
        return (None if cursor is None else int(cursor)), name

    # --- units ------------------------------------------------------------------------
    def done_units(self, job_id: str) -> set[str]:
        """Keys of every finished unit (streamed with SSCAN)."""
        return {reply_text(m) for m in self.client.sscan_iter(self.keys(job_id).done, count=1000)}

    # --- reading ----------------------------------------------------------------------
    def progress(self, job_id: str, *, stale_after: float = 3600.0) -> JobProgress:
        """A snapshot of the job's counts and per-pair verdicts, in one round trip.

        Raises:
            KeyError: no such job.
        """
        keys = self.keys(job_id)
        reply = self._read_progress(
            keys=[
                keys.meta,
                keys.done,
                keys.failed,
                keys.inflight,
                keys.results,
                keys.pairs,
                keys.scenarios,
                keys.scenario_errors,
            ],
            args=[
                time.time() - stale_after,
                keys.verdict_prefix,
                f"{self.prefix}:job:",
                f"{self.prefix}:sched:",
                job_id,
            ],
        )
        if not reply:
            raise KeyError(f"no job {job_id!r} in the store")
        flat, counts, verdicts, share = reply
        meta = {reply_text(k): reply_text(v) for k, v in zip(flat[::2], flat[1::2], strict=True)}
        done, failed, inflight, results, scenarios, scenario_errors = (int(c) for c in counts)
        results += int(meta.get("drained") or 0)
        progress = [_pair_progress(reply_text(names), tally) for _p, names, *tally in verdicts]
        return JobProgress(
            job_id=job_id,
            name=meta.get("name", ""),
            status=JobStatus(meta.get("status", "queued")),
            created=meta.get("created", ""),
            started_at=meta.get("started", ""),
            finished_at=meta.get("finished", ""),
            total_units=int(meta.get("total_units", 0)),
            done_units=done,
            failed_units=failed,
            in_flight=inflight,
            results=results,
            pairs=sorted(progress, key=lambda p: (p.answering, p.parsing)),
            total_scenarios=int(meta.get("total_scenarios", 0)),
            scenarios_done=scenarios,
            scenario_errors=scenario_errors,
            queue=meta.get("queue") or DEFAULT_QUEUE,
            weight=float(meta.get("weight") or 1.0),
            share=None if share is None else float(reply_text(share)),
            error=meta.get("error", ""),
        )

    # --- results drained out of Redis (``results_to``) --------------------------------
    def results_to(self, job_id: str) -> str | None:
        """Where the job's results are drained to, None when they stay in Redis."""
        value = self.client.hget(self.keys(job_id).meta, "results_to")
        return None if value is None else reply_text(value)

    def drain_candidates(
        self, batch: int, limit: int = 200, *, queues: Collection[str] | None = None
    ) -> list[tuple[str, str]]:
        """``(job id, results location)`` of the newest ``limit`` jobs with
        results to drain now: ``batch`` or more in Redis, or any once the job
        has ended; with ``queues``, only jobs submitted to one of them."""
        ids = [reply_text(i) for i in self.client.zrevrange(self._index(), 0, limit - 1)]
        pipe = self.client.pipeline(transaction=False)
        for job_id in ids:
            pipe.hmget(self.keys(job_id).meta, ["results_to", "status", "queue"])
            pipe.hlen(self.keys(job_id).results)
        replies = pipe.execute()
        found = []
        for job_id, (url, status, queue), waiting in zip(
            ids, replies[::2], replies[1::2], strict=True
        ):
            if url is None or not waiting:
                continue
            served = reply_text(queue) if queue is not None else DEFAULT_QUEUE
            if queues is not None and served not in queues:
                continue
            ended = status is not None and reply_text(status) in (
                JobStatus.DONE,
                JobStatus.CANCELLED,
                JobStatus.FAILED,
            )
            if ended or int(waiting) >= batch:
                found.append((job_id, reply_text(url)))
        return found

    def results_page(self, job_id: str, limit: int) -> list[tuple[str, bytes]]:
        """Up to ``limit`` results still in Redis as ``(key, result JSON)``."""
        key = self.keys(job_id).results
        page: dict[str, bytes] = {}
        cursor = 0
        while len(page) < limit:
            reply: Any = self.client.hscan(key, cursor, count=min(1000, limit))
            cursor, items = reply
            page.update((reply_text(k), blob) for k, blob in items.items())
            if cursor == 0:
                break
        return [(k, self._decompress(b)) for k, b in list(page.items())[:limit]]

    def record_shard(self, job_id: str, url: str, keys: Sequence[str]) -> int:
        """Record a shard written with the results under ``keys`` and remove
        those results from Redis, in one step; returns how many were removed
        (0 when another drainer removed them already)."""
        k = self.keys(job_id)
        return int(self._record_shard(keys=[k.results, k.shards, k.meta], args=[url, *keys]))

    def shard_urls(self, job_id: str) -> list[str]:
        """The job's recorded shards, oldest first (their names sort by time)."""
        return sorted(reply_text(s) for s in self.client.hkeys(self.keys(job_id).shards))

    def result_count(self, job_id: str) -> int:
        """How many results the job has, in Redis and drained."""
        pipe = self.client.pipeline(transaction=False)
        pipe.hlen(self.keys(job_id).results)
        pipe.hget(self.keys(job_id).meta, "drained")
        stored, drained = pipe.execute()
        return int(stored) + int(drained or 0)

    def iter_results(self, job_id: str, *, batch: int = 500) -> Iterator[VerificationResult]:
        """Every result in Redis, streamed with HSCAN (memory bounded by
        ``batch``); not those drained to shards (see :meth:`shard_urls`)."""
        for _key, blob in self.client.hscan_iter(self.keys(job_id).results, count=batch):
            yield VerificationResult.model_validate_json(self._decompress(blob))

    def iter_keyed_batches(
        self, job_id: str, *, batch: int = 1000
    ) -> Iterator[list[tuple[str, bytes]]]:
        """Every stored result as ``(key, JSON text)``, unvalidated, one HSCAN page at a time.

        The bulk read behind the fast Parquet export: no ``VerificationResult`` is
        built, and memory is bounded by one page (about ``batch`` results); a page
        may be empty. Results drained to shards are not among them (see
        :meth:`shard_urls`).

        Raises:
            redis.RedisError: Redis is unreachable.
            zstandard.ZstdError: a stored blob is corrupt.
        """
        decompress = self._decompress
        for page in self._scan_results(job_id, batch):
            yield [(reply_text(key), decompress(blob)) for key, blob in page.items()]

    def _scan_results(self, job_id: str, batch: int) -> Iterator[dict[bytes, bytes]]:
        """The job's result hash one HSCAN page (field -> blob) at a time."""
        key = self.keys(job_id).results
        cursor = 0
        while True:
            # This client answers bytes: a dict of field -> blob, whatever the stubs say.
            reply: Any = self.client.hscan(key, cursor, count=batch)
            cursor, page = reply
            yield page
            if cursor == 0:
                return

    def result_keys(self, job_id: str) -> list[str]:
        """The keys of every result stored so far (HKEYS; no result is read).

        A live viewer diffs this list against what it has seen to fetch only new
        results with :meth:`get_results`.

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        return [reply_text(key) for key in self.client.hkeys(self.keys(job_id).results)]

    def verdict_keys(self, job_id: str) -> dict[tuple[str, str], dict[str, set[str]]]:
        """The result keys of every verdict so far, per (answering, parsing)
        display names: ``{"pass": {...}, "fail": {...}}``. No result is read
        (what clustered intervals need, with the keys' questions).

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        keys = self.keys(job_id)
        pairs = {
            reply_text(pid): reply_text(names)
            for pid, names in self.client.hgetall(keys.pairs).items()
        }
        pipe = self.client.pipeline(transaction=False)
        for pair_id in pairs:
            for verdict in ("pass", "fail"):
                pipe.smembers(keys.verdicts(pair_id, verdict))
        replies = iter(pipe.execute())
        found: dict[tuple[str, str], dict[str, set[str]]] = {}
        for names in pairs.values():
            answering, _, parsing = names.partition("\t")
            found[(answering, parsing)] = {
                verdict: {reply_text(k) for k in next(replies)} for verdict in ("pass", "fail")
            }
        return found

    def get_results(self, job_id: str, keys: Sequence[str]) -> list[VerificationResult | None]:
        """The stored results under ``keys`` (HMGET), None where a key has none.

        Raises:
            redis.RedisError: Redis is unreachable.
            pydantic.ValidationError: a stored result no longer validates.
        """
        if not keys:
            return []
        blobs: Any = self.client.hmget(self.keys(job_id).results, list(keys))
        return [
            None if blob is None else VerificationResult.model_validate_json(self._decompress(blob))
            for blob in blobs
        ]

    def failed_units(self, job_id: str) -> set[str]:
        """Keys of the finished units with at least one errored result."""
        return {reply_text(m) for m in self.client.sscan_iter(self.keys(job_id).failed, count=1000)}

    def forget_units(self, job_id: str, units: Mapping[str, Sequence[str]]) -> int:
        """Make finished units unfinished again so that a resume runs them anew
        (``resume --retry-errors``): their results, verdicts and done/failed marks
        go; a worker then stores the new results once, as on a first run.

        Args:
            units: Unit key -> the keys of the results that unit wrote.

        Returns:
            How many results were removed.

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        keys = self.keys(job_id)
        pairs = [reply_text(p) for p in self.client.hkeys(keys.pairs)]
        removed = 0
        for unit, result_keys in units.items():
            blobs: Any = self.client.hmget(keys.results, list(result_keys))
            present = [k for k, blob in zip(result_keys, blobs, strict=True) if blob is not None]
            pipe = self.client.pipeline(transaction=True)
            for key in present:
                pipe.hdel(keys.results, key)
                # The pair of a result is in its blob; removing the key from every
                # pair's verdict sets costs less than reading the blobs back.
                for pair in pairs:
                    for verdict in ("pass", "fail", "error", "none"):
                        pipe.srem(keys.verdicts(pair, verdict), key)
            pipe.srem(keys.failed, unit)
            pipe.srem(keys.done, unit)
            pipe.execute()
            removed += len(present)
        if units:
            # Not done any more: watchers wait and the last unit finishes it again.
            self.client.hset(keys.meta, "status", JobStatus.RUNNING.value)
            self.client.hdel(keys.meta, "finished")
        return removed

    def delete_job(self, job_id: str) -> None:
        """Remove every key of the job."""
        keys = self.keys(job_id)
        pattern = f"{keys.prefix}:job:{job_id}:*"
        for key in self.client.scan_iter(match=pattern, count=1000):
            self.client.delete(key)
        self.client.zrem(self._index(), job_id)


def _pair_progress(names: str, counts: Sequence[Any]) -> PairProgress:
    """One pair's verdict counts (pass, fail, error, none) under its display names
    (``answering\tparsing``)."""
    answering, _, parsing = names.partition("\t")
    passed, failed, errors, none = (int(c) for c in counts)
    return PairProgress(
        answering=answering,
        parsing=parsing,
        passed=passed,
        failed=failed,
        errors=errors,
        unverified=none,
    )
