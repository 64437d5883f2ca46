"""The stall detector: a job with units left that no message carries any more.

The reaper returns messages that a dead worker left in kombu's unacked hash, but
a message can also vanish where nothing in Redis names it: kombu's Redis transport
pops a message (``BRPOP``) before it records it as unacked, so a worker killed or a
Redis server stopped between the two loses it; a task whose worker-side setup fails
is acked without a result. Such a job would wait forever with a few units missing.

When the queue is empty, every unit still to do must be carried by an unacked
message or a task some worker holds. A queued or running job with units left that
nothing carries, seen twice at least ``settle`` seconds apart with no progress in
between, has lost messages: its missing units are sent again, exactly as
``verifleet resume`` would. Results are written once under their keys, so a unit
that was only slow, not lost, still ends up in the results exactly once.

Suspicions live in Redis (``<prefix>:stalls``) because the reaper's turn moves
from process to process. While the queue has messages, nothing is suspected:
workers are busy, and a lost unit is found once the queue drains.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Iterable
from typing import Any

from celery import Celery

from verifleet.store import (
    DEFAULT_QUEUE,
    TASK_NAMES,
    Liveness,
    ResultStore,
    send_units,
    unit_messages,
)

from ._jobs import JobCache

__all__ = ["StallDetector"]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


log = logging.getLogger(__name__)

# kombu's Redis transport keeps each priority level of a queue in its own list.
_PRIORITY_SEP = "\x06\x16"
_PRIORITY_STEPS = (3, 6, 9)


def _job_of_unacked(raw: Any) -> str | None:
    """The job id in one of kombu's unacked entries (``[message, exchange, key]``)."""
    try:
        message = json.loads(raw)[0]
        if message["headers"].get("task") not in TASK_NAMES:
            return None
        body = message["body"]
        if message["properties"].get("body_encoding") == "base64":
            body = base64.b64decode(body)
        job_id = json.loads(body)[0][0]
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None
    return job_id if isinstance(job_id, str) else None


def _held_by(raw: Any) -> tuple[str | None, str | None]:
    """The job id and the owner in a :class:`~verifleet.store.Liveness` hold record."""
    try:
        record = json.loads(raw)
        job_id, owner = record["task"]["args"][0], record["owner"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None, None
    return (
        job_id if isinstance(job_id, str) else None,
        owner if isinstance(owner, str) else None,
    )


class StallDetector:
    """Finds jobs whose missing units no message carries and sends those units again.

    Args:
        store: The result store (jobs, done units, the hold records).
        jobs: The worker's job spec cache.
        app: The Celery app to send tasks with.
        queue: The default queue: while it holds messages nothing is suspected.
            A job's missing units go to the job's own queue, and a job whose
            queue holds messages or whose schedule still gives out units is
            not suspected either.
        settle: Seconds a job must stay uncarried without progress before its
            units are sent again; far longer than the milliseconds between a
            worker taking a message and recording it.
        max_resends: Resends in a row without progress after which a job is left
            alone (a unit that can never run would otherwise be sent forever);
            ``verifleet resume`` still works then.
    """

    def __init__(
        self,
        store: ResultStore,
        jobs: JobCache,
        app: Celery,
        *,
        queue: str = DEFAULT_QUEUE,
        settle: float = 30.0,
        max_resends: int = 3,
    ) -> None:
        self.store = store
        self.jobs = jobs
        self.app = app
        self.queue = queue
        self.settle = settle
        self.max_resends = max_resends
        self._key = f"{store.prefix}:stalls"
        self._held = f"{store.prefix}:held"

    def _busy_queues(self, queues: Iterable[str]) -> set[str]:
        """Which of ``queues`` hold messages now."""
        names = sorted(set(queues))
        pipe = self.store.client.pipeline(transaction=False)
        for queue in names:
            pipe.llen(queue)
            for step in _PRIORITY_STEPS:
                pipe.llen(f"{queue}{_PRIORITY_SEP}{step}")
        lengths = pipe.execute()
        per = 1 + len(_PRIORITY_STEPS)
        return {
            queue
            for i, queue in enumerate(names)
            if any(int(n) > 0 for n in lengths[i * per : (i + 1) * per])
        }

    def _carried(self, unacked_key: str) -> set[str]:
        """The jobs an unacked message or a live process's hold names.

        A hold of a process that is gone carries nothing: a worker killed
        between finishing a task and writing its release (they are written
        every second) leaves the hold behind, and its job, missing a
        message lost to the same kill, would otherwise never be resent. Such
        holds are deleted here (the reaper, which ran just before, has already
        returned the dead process's unacked messages; one it did not reach yet
        it returns as held by nobody).
        """
        client = self.store.client
        carried = {_job_of_unacked(raw) for raw in client.hvals(unacked_key)}
        held = {_text(k): _held_by(v) for k, v in client.hgetall(self._held).items()}
        owners = sorted({owner for _job, owner in held.values() if owner is not None})
        alive = Liveness(self.store).alive(owners)
        stale = [task for task, (_job, owner) in held.items() if owner not in alive]
        carried |= {job for job, owner in held.values() if owner in alive}
        if stale:
            client.hdel(self._held, *stale)
        carried.discard(None)
        return {j for j in carried if j is not None}

    def check(self, unacked_key: str, *, now: float | None = None) -> dict[str, int]:
        """One look at the fleet; sends the missing units of jobs found stalled.

        Args:
            unacked_key: The broker's hash of unacked messages (kombu's
                ``channel.unacked_key``).
            now: The time (for tests); ``time.time()`` by default.

        Returns:
            Units sent again, by job id (empty when nothing stalled).

        Raises:
            redis.RedisError: Redis is unreachable; nothing is sent, and the
                suspicions recorded so far stay for the next look.
        """
        now = time.time() if now is None else now
        client = self.store.client
        unfinished = self.store.unfinished_jobs()
        busy = self._busy_queues([self.queue, *(job.queue for job in unfinished)])
        if self.queue in busy:
            client.delete(self._key)
            return {}
        carried = self._carried(unacked_key)
        previous = {
            k.decode() if isinstance(k, bytes) else str(k): json.loads(v)
            for k, v in client.hgetall(self._key).items()
        }
        suspects: dict[str, dict[str, float]] = {}
        resent: dict[str, int] = {}
        for job_id, done, queue, giving_out in unfinished:
            # A job whose schedule still gives out units, or whose queue holds
            # messages, is carried: its workers are busy, nothing is lost yet.
            if job_id in carried or giving_out or queue in busy:
                continue
            seen = previous.get(job_id)
            if seen is None or seen["done"] != done:
                suspects[job_id] = {"done": done, "since": now, "resends": 0}
            elif now - seen["since"] < self.settle:
                suspects[job_id] = seen
            elif seen["resends"] >= self.max_resends:
                if seen["resends"] == self.max_resends:
                    log.error(
                        "job %s: %d resends brought no progress; leaving it to "
                        "`verifleet resume` (see the workers' logs for why its units fail)",
                        job_id,
                        self.max_resends,
                    )
                suspects[job_id] = {**seen, "resends": self.max_resends + 1}
            else:
                resent[job_id] = self._resend(job_id, queue)
                suspects[job_id] = {"done": done, "since": now, "resends": seen["resends"] + 1}
        self._store_suspects(suspects.items())
        return resent

    def _store_suspects(self, suspects: Iterable[tuple[str, dict[str, float]]]) -> None:
        pipe = self.store.client.pipeline(transaction=True)
        pipe.delete(self._key)
        for job_id, seen in suspects:
            pipe.hset(self._key, job_id, json.dumps(seen))
        pipe.execute()

    def _resend(self, job_id: str, queue: str) -> int:
        spec = self.jobs.get(job_id)
        done = self.store.done_units(job_id)
        sent = send_units(
            self.app,
            unit_messages(job_id, spec.benchmark, spec.config, skip=done),
            queue=queue,
        )
        log.warning(
            "job %s stalled: %d unit(s) without results and no message left for them; sent again",
            job_id,
            sent,
        )
        return sent
