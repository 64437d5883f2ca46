"""Draining a job's finished results out of Redis into shards, and reading both.

See :mod:`._shards` for the shard files and why a shard written twice or
half-written is never counted twice or lost. The drainer takes a page of the
job's result hash (results are written once, under their keys, and a unit done
never writes again), writes it as one shard, then records the shard and removes
exactly those results in one script (:meth:`ResultStore.record_shard`).
Progress counts drained results from the job's ``drained`` counter, which grows
only by what that script removed.

The drainer runs in ``verifleet worker`` processes (a thread), not in
:mod:`verifleet.workers`, whose import graph stays free of pyarrow; it is
imported only when a job has a results location.

A drainer writes only what its operator allows (:mod:`._roots`; docs/fleet.md,
"Results leave Redis as the job runs"); other jobs' results stay in Redis.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Iterator, Sequence
from typing import Protocol

import redis

from verifleet.schemas import VerificationResult
from verifleet.store import JobStatus, ResultStore, TokenLock, job_id_problem

from ._roots import ResultsRoots
from ._shards import read_shard, shard_keys, write_shard

__all__ = ["DrainerThread", "ResultDrain", "StoredResults", "start_drainer"]

log = logging.getLogger(__name__)


class WorkerSettingsLike(Protocol):
    """What the drainer reads of ``verifleet.workers``' settings (not imported
    here: results sit below the workers, whose modules stay free of pyarrow)."""

    redis_url: str
    prefix: str
    drain_batch: int
    drain_interval: float


class ResultDrain:
    """Moves finished results of jobs with a results location into shards.

    Args:
        store: The result store.
        roots: Where this worker may write shards (none: nowhere).
        queues: The queues this worker serves: only their jobs are drained
            (None: every queue's, for tools outside a worker).
        batch: Results per shard; a job is drained once it has this many in
            Redis, or has any left once it is done or cancelled.
        lock_seconds: How long a drainer may hold a job (longer than writing
            one shard; a drainer that dies frees it after this).

    Raises:
        redis.RedisError: Redis is unreachable (every method).
    """

    def __init__(
        self,
        store: ResultStore,
        *,
        roots: ResultsRoots,
        queues: Collection[str] | None = None,
        batch: int = 5000,
        lock_seconds: float = 120.0,
    ):
        self.store = store
        self.roots = roots
        self.queues = None if queues is None else frozenset(queues)
        self.batch = batch
        self.lock_ms = int(lock_seconds * 1000)
        self._locks = TokenLock(store.client)
        self._refused: set[tuple[str, str]] = set()

    def candidates(self) -> list[tuple[str, str]]:
        """``(job id, results location)`` of the jobs with results to drain now
        that this drainer may write (see the module docstring); each job it may
        not is logged once, with the reason, and left in Redis."""
        found = []
        for job_id, url in self.store.drain_candidates(self.batch, queues=self.queues):
            refusal = job_id_problem(job_id) or self.roots.refusal(url)
            if refusal is None:
                found.append((job_id, url))
            elif (job_id, refusal) not in self._refused:
                self._refused.add((job_id, refusal))
                log.warning("job %r: results not drained, they stay in Redis: %s", job_id, refusal)
        return found

    def drain(self, job_id: str, url: str) -> int:
        """Write the job's results in Redis, ``batch`` at a time, as shards until
        fewer than ``batch`` are left (none, once the job has ended); returns
        how many results left Redis. Does nothing while another drainer has the
        job.

        Raises:
            OSError: a shard could not be written; the results stay in Redis.
            PermissionError: ``url`` or ``job_id`` is one this drainer may not
                write (:meth:`candidates` leaves such jobs out).
        """
        refusal = job_id_problem(job_id) or self.roots.refusal(url)
        if refusal is not None:
            raise PermissionError(refusal)
        lock = self.store.keys(job_id).drain_lock
        token = self._locks.acquire(lock, ms=self.lock_ms)
        if token is None:
            return 0
        moved = 0
        try:
            while True:
                page = self.store.results_page(job_id, self.batch)
                ended = self.store.status(job_id) in (
                    JobStatus.DONE,
                    JobStatus.CANCELLED,
                    JobStatus.FAILED,
                )
                if not page or (len(page) < self.batch and not ended):
                    return moved
                shard = write_shard(url, job_id, page)
                removed = self.store.record_shard(job_id, shard, [k for k, _ in page])
                moved += removed
                log.info("job %s: %d results drained to %s", job_id, removed, shard)
        finally:
            self._locks.release(lock, token)


class DrainerThread(threading.Thread):
    """Every ``interval`` seconds, drains the jobs that have results to drain.

    Errors are logged and retried at the next turn: a results location that
    cannot be written leaves the results in Redis, where nothing is lost.
    """

    def __init__(self, drain: ResultDrain, *, interval: float = 2.0) -> None:
        super().__init__(name="verifleet-drainer", daemon=True)
        self.drain = drain
        self.interval = interval
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            try:
                for job_id, url in self.drain.candidates():
                    self.drain.drain(job_id, url)
            except redis.RedisError as exc:
                log.warning("drainer: redis unavailable (%s); retrying", exc)
            except Exception:  # an unwritable location must not stop the worker
                log.exception("drainer failed; the results stay in Redis, retrying")

    def stop(self) -> None:
        """Stop after the current turn."""
        self._stop_event.set()


def start_drainer(
    settings: WorkerSettingsLike, *, roots: ResultsRoots, queues: Collection[str]
) -> DrainerThread:
    """Start this process's drainer thread with the workers' settings
    (``VERIFLEET_DRAIN_BATCH``, ``VERIFLEET_DRAIN_INTERVAL``, the Redis URL and
    key prefix), writing only under ``roots`` and only jobs of ``queues``.

    Raises:
        ConfigError: a malformed Redis URL.
    """
    store = ResultStore.from_url(settings.redis_url, prefix=settings.prefix)
    drain = ResultDrain(store, roots=roots, queues=queues, batch=settings.drain_batch)
    thread = DrainerThread(drain, interval=settings.drain_interval)
    thread.start()
    return thread


class StoredResults:
    """A job's results wherever they are: Redis, then its recorded shards, each
    result key once (the newest copy).

    Args:
        store: The result store.
        job_id: The job.
    """

    def __init__(self, store: ResultStore, job_id: str) -> None:
        self.store = store
        self.job_id = job_id

    def shards(self) -> list[str]:
        """The URLs of the job's recorded shards, oldest first."""
        return self.store.shard_urls(self.job_id)

    def pages(self, batch: int = 1000) -> Iterator[list[tuple[str, bytes]]]:
        """Pages of ``(result key, result JSON)``: what Redis holds first, then
        the shards, newest first; a key seen once is skipped after.

        The newest copy of a result wins: a shard recorded twice holds the same
        results, and a unit run again (``resume --retry-errors``) after its old
        results were drained has its new ones in Redis or in a later shard.

        Raises:
            OSError: a recorded shard cannot be read.
            redis.RedisError: Redis is unreachable.
        """
        seen: set[str] = set()
        for found in self.store.iter_keyed_batches(self.job_id, batch=batch):
            fresh = [(k, b) for k, b in found if k not in seen]
            seen.update(k for k, _ in fresh)
            yield fresh
        # Listed after the scan: a result drained while it ran (HSCAN promises
        # only what stays) is in one of these.
        page: list[tuple[str, bytes]] = []
        for shard in reversed(self.shards()):
            for key, data in read_shard(shard):
                if key not in seen:
                    seen.add(key)
                    page.append((key, data))
                if len(page) >= batch:
                    yield page
                    page = []
        if page:
            yield page

    def json_pages(self, batch: int = 1000) -> Iterator[list[bytes]]:
        """:meth:`pages` without the keys (what the fast Parquet export reads)."""
        for page in self.pages(batch):
            yield [data for _key, data in page]

    def results(self) -> Iterator[VerificationResult]:
        """Every result, validated."""
        for page in self.pages():
            yield from (VerificationResult.model_validate_json(data) for _key, data in page)

    def result_keys(self) -> list[str]:
        """Every result key: Redis's, then the shards' (listed after, so a result
        drained in between is in one of them), each once.

        Raises:
            OSError: a recorded shard cannot be read.
        """
        found = dict.fromkeys(self.store.result_keys(self.job_id))
        found.update(dict.fromkeys(k for shard in self.shards() for k in shard_keys(shard)))
        return list(found)

    def get(self, keys: Sequence[str]) -> list[VerificationResult | None]:
        """The results under ``keys`` (None where there is none): from Redis, and
        for the keys no longer there, from the shards.

        Raises:
            OSError: a recorded shard cannot be read.
        """
        out = self.store.get_results(self.job_id, keys)
        missing = {k: i for i, k in enumerate(keys) if out[i] is None}
        for shard in reversed(self.shards()) if missing else []:
            for key, data in read_shard(shard):
                index = missing.pop(key, None)
                if index is not None:
                    out[index] = VerificationResult.model_validate_json(data)
            if not missing:
                break
        return out
