"""Keeping a queue fed from its schedule (see :mod:`._schedule`).

Every worker process runs a feeder for each queue it consumes; one at a time per
queue (a lock in Redis) tops the queue up to its depth with the next units the
schedule gives out, so the broker holds a few seconds of work, not whole jobs.
The depth follows the rate at which the fleet drains the queue (units ever given
out minus those still queued, both in Redis, so every feeder sees the whole
fleet's rate), so a fleet of any size neither starves nor queues more than about
``horizon`` seconds of work in front of a new job.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ._keys import JobKeys
from ._lock import TokenLock
from ._packing import pack_units
from ._schedule import Schedule, unit_ref_at
from ._sending import send_units
from ._units import count_units

if TYPE_CHECKING:
    import redis
    from celery import Celery

    from verifleet.schemas import JobSpec

__all__ = ["QueueFeeder"]

log = logging.getLogger(__name__)


class QueueFeeder:
    """Tops one queue up from its schedule.

    Args:
        client: The store's Redis client (the broker is on the same server).
        app: The Celery app to send tasks with.
        queue: The queue (its Redis list has the queue's name).
        specs: A job's spec by id (a worker's cache).
        prefix: The store's key prefix.
        min_depth: The fewest messages kept queued.
        max_depth: The most messages kept queued.
        horizon: Seconds of work kept queued at the measured drain rate.
        message_seconds: The most seconds of one thread's work one message
            holds (at the measured rate; see :meth:`_largest_messages`).
        max_per_message: The most units of one job one message carries (see
            :mod:`._packing`; 1: a message per unit).
        spread: How many messages a job's share of a fill is cut into at least
            before a message carries more than one unit; 1 packs every fill
            into messages of ``max_per_message``, whatever the rates.
        busy_key: The broker's hash of unacked messages (kombu's
            ``channel.unacked_key``): how many messages workers hold, i.e. how
            many threads are busy. Without it, the units in flight stand for
            the busy threads, which overcounts them once a thread takes
            several of its message's units up at a time.
        unit_seconds: A job's measured seconds per unit of a thread's time
            (None while unknown; the worker's ``UnitTimes``): where known, it
            sizes that job's messages instead of the estimate from the rate.

    Raises:
        redis.RedisError: Redis is unreachable (:meth:`feed`).
    """

    def __init__(
        self,
        client: redis.Redis,
        app: Celery,
        queue: str,
        specs: Callable[[str], JobSpec],
        *,
        prefix: str = "vf",
        min_depth: int = 32,
        max_depth: int = 20_000,
        horizon: float = 2.0,
        message_seconds: float = 4.0,
        max_per_message: int = 16,
        spread: int = 16,
        busy_key: str | None = None,
        unit_seconds: Callable[[str], float | None] | None = None,
    ) -> None:
        self.client = client
        self.app = app
        self.queue = queue
        self.specs = specs
        self.schedule = Schedule(client, prefix=prefix)
        self.prefix = prefix
        self.min_depth = min_depth
        self.max_depth = max_depth
        self.horizon = horizon
        self.message_seconds = message_seconds
        self.max_per_message = max_per_message
        self.spread = spread
        self.busy_key = busy_key
        self.unit_seconds = unit_seconds
        self.rate = 0.0
        """Messages taken from the queue per second (smoothed)."""
        self._lock = f"{prefix}:sched:{queue}:lock"
        self._locks = TokenLock(client)
        self._given = self.schedule.given_out_key(queue)
        # Units per message of what is queued (a running estimate shared by the
        # fleet's feeders): the depth is counted in units, the queue in messages.
        self._per_message = f"{prefix}:sched:{queue}:per-message"
        self._last: tuple[float, int] | None = None  # (when, units taken by then)
        self.calm_for = 0.0
        """Seconds, at the measured rate, before the queue (as of the last
        :meth:`feed`) can fall below the half depth that the next fill waits for:
        no look before then can send anything (see ``FeederThread``)."""

    @property
    def depth(self) -> int:
        """How many messages to keep queued now."""
        wanted = int(self.rate * self.horizon)
        return max(self.min_depth, min(self.max_depth, wanted))

    def _observe(self, taken: int) -> None:
        now = time.monotonic()
        if self._last is not None:
            when, before = self._last
            elapsed = now - when
            if elapsed > 0.05:
                self.rate = 0.7 * self.rate + 0.3 * (max(0, taken - before) / elapsed)
                self._last = (now, taken)
        else:
            self._last = (now, taken)

    def _calm(self, backlog: int, depth: int) -> float:
        """Seconds until ``backlog`` units drain to the half ``depth`` a fill
        waits for, at the measured rate (0 while none is measured)."""
        return max(0.0, backlog - depth // 2) / self.rate if self.rate > 0 else 0.0

    def _largest_messages(self, left: dict[str, int]) -> dict[str, int]:
        """The most units one message of each job (``left``: its units still
        to give out, this fill's included) may hold now.

        At most ``message_seconds`` of one thread's work: a unit takes a thread
        what this worker measured for the job (``unit_seconds``), or until it
        has, about (busy threads) / (units finished per second) seconds,
        Little's law; the busy threads are the messages workers hold
        (``busy_key``), or without it the fill's jobs' units started and not
        done (a thread that takes several units up at a time has them all in
        flight). On a fleet bound by an endpoint's window (many more threads
        than calls allowed), units wait for their slots and take long: messages
        stay single, since a thread's packed units would sit behind one another
        while other threads could run them. And near a job's end a message holds at most what is left per
        thread running the job, so the job's last units are spread over threads
        rather than queued behind each other in a few messages.
        """
        jobs = sorted(left)
        if self.spread <= 1:  # pack every fill in full (tests use it)
            return dict.fromkeys(jobs, self.max_per_message)
        measured = {job: self.unit_seconds(job) if self.unit_seconds else None for job in jobs}
        known = any(seconds for seconds in measured.values())
        if self.max_per_message <= 1 or not jobs or (self.rate <= 0 and not known):
            return dict.fromkeys(jobs, 1)
        pipe = self.client.pipeline(transaction=False)
        for job_id in jobs:
            pipe.zcard(JobKeys(job_id, prefix=self.prefix).inflight)
        if self.busy_key is not None:
            pipe.hlen(self.busy_key)
        replies = [int(n) for n in pipe.execute()]
        running = dict(zip(jobs, replies, strict=False))
        total = sum(running.values())
        if self.busy_key is not None and total > 0:
            # A job's busy threads: its share of the units in flight, scaled
            # down to the threads the broker counts (never up: a thread has
            # at least one unit in flight).
            scale = min(1.0, replies[-1] / total)
            running = {job: round(n * scale) for job, n in running.items()}
            total = replies[-1]
        by_rate = int(self.message_seconds * self.rate / total) if total > 0 else 1

        def most(job: str) -> int:
            seconds = measured[job]
            by_time = int(self.message_seconds / seconds) if seconds else by_rate
            near_end = left[job] // max(1, running[job])
            return max(1, min(self.max_per_message, by_time, near_end))

        return {job: most(job) for job in jobs}

    def feed(self) -> int:
        """Top the queue up if it is below half its depth; returns units sent (in
        one message each, or several to a message; see :mod:`._packing`).

        A job the schedule names whose spec is gone (deleted) is skipped; its
        claims are dropped with it.
        """
        pipe = self.client.pipeline(transaction=False)
        pipe.get(self._given)
        pipe.llen(self.queue)
        pipe.get(self._per_message)
        given, queued, per_message = pipe.execute()
        queued, per_message = int(queued), float(per_message or 1)
        backlog = round(queued * per_message)
        self._observe(int(given or 0) - backlog)
        depth = self.depth
        self.calm_for = self._calm(backlog, depth)
        if backlog >= depth // 2:
            return 0
        token = self._locks.acquire(self._lock, ms=10_000)
        if token is None:
            return 0
        try:
            # The shares before the claim: a job whose last units go out now is
            # still in it. They label each message, so Flower shows them.
            shares = self.schedule.shares(self.queue)
            claims = self.schedule.claim(self.queue, depth - backlog)
            refs = []
            left: dict[str, int] = {}
            for job_id, position in claims:
                try:
                    spec = self.specs(job_id)
                except KeyError:
                    log.warning("scheduled job %s has no spec; its units are dropped", job_id)
                    continue
                # Units from this one to the job's last: the fill's first claim
                # of a job counts the fill's units of it too.
                rest = count_units(spec.benchmark, spec.config) - position
                left[job_id] = max(left.get(job_id, rest), rest)
                ref, labels = unit_ref_at(job_id, spec.benchmark, spec.config, position)
                weight, share = shares.get(job_id, (1.0, 1.0))
                labels["share"] = f"{share:.0%} of queue {self.queue} (weight {weight:g})"
                refs.append((ref, labels))
            largest = self._largest_messages(left)
            messages = pack_units(
                refs, max_per_message=self.max_per_message, spread=self.spread, largest=largest
            )
            sent = send_units(self.app, messages, queue=self.queue)
            if sent:
                mean = (backlog + len(refs)) / (queued + sent)
                self.client.set(self._per_message, f"{mean:.3f}", ex=3600)
                self.calm_for = self._calm(backlog + len(refs), depth)
        finally:
            self._locks.release(self._lock, token)
        return len(refs) if sent else 0
