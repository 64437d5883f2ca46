"""The worker process's heartbeat, and the reaper that gives a dead worker's
messages back to the queue (see :mod:`verifleet.store` ``Liveness``).

The reaper looks at the broker's unacked messages (kombu's Redis transport keeps
them in a hash and a sorted set by the time they were taken) and returns the ones
that have been out longer than a grace period and are held by no live worker
process, with kombu's own ``restore_by_tag``: the message goes back to its queue
unchanged, task id included.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Collection
from typing import Any

import redis
from celery import Celery

from verifleet.limits import reclaim_leases
from verifleet.store import Liveness

from ._stalls import StallDetector
from ._supervisor import supervised_owner_id

__all__ = ["LivenessThread", "process_owner_id"]

log = logging.getLogger(__name__)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def process_owner_id() -> str:
    """A name for this worker process, unique across machines and restarts: the
    one its supervisor chose, if it has one (the supervisor clears that heartbeat
    when it replaces the process)."""
    return supervised_owner_id() or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _worker_request_ids() -> Collection[str]:
    from celery.worker import state

    # dict.copy runs without releasing the GIL: iterating the live dict while the
    # consumer thread changes it could raise "dictionary changed size".
    return state.requests.copy().keys()


def _task_id(raw: Any) -> str | None:
    """The Celery task id inside one of kombu's unacked entries."""
    if raw is None:
        return None
    try:
        message = json.loads(raw)[0]
        task_id = message["headers"]["id"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    return task_id if isinstance(task_id, str) else None


class LivenessThread(threading.Thread):
    """Beats every ``interval`` seconds; when it wins the fleet-wide reaper turn,
    returns the messages of dead workers to the queue.

    The tasks this process receives and finishes (:meth:`hold`, :meth:`release`)
    are written every ``flush_interval`` seconds (1 s) in one round trip with the
    heartbeat when it is due, not one each: two Redis round trips less per unit,
    and a task received and finished between two writes (most units, which take
    less than a second) is never written at all. Nothing is lost by the delay: a
    message is reaped only after ``grace`` seconds out without a live holder,
    far longer than ``flush_interval``, and a worker that dies before writing a
    hold is dead, which is when its messages must go back anyway.

    Redis errors are logged and retried at the next beat (or write): the
    heartbeat must not kill the worker during a Redis restart.

    Args:
        grace: Seconds a message must have been out before it can be reaped; a
            live worker records a message within ``flush_interval`` of taking it.
        flush_interval: Seconds between two writes of holds and releases.
    """

    def __init__(
        self,
        liveness: Liveness,
        owner: str,
        app: Celery,
        *,
        interval: float = 5.0,
        grace: float = 20.0,
        flush_interval: float = 1.0,
        stalls: StallDetector | None = None,
    ) -> None:
        super().__init__(name="verifleet-liveness", daemon=True)
        self.liveness = liveness
        self.owner = owner
        self.app = app
        self.interval = interval
        self.grace = grace
        self.stalls = stalls
        self._stop_event = threading.Event()
        self.flush_interval = flush_interval
        self._tracked_lock = threading.Lock()
        # task id -> when this process recorded it as held (monotonic)
        self._tracked: dict[str, float] = {}
        # Not written yet: holds (task id -> record) and releases.
        self._holds: dict[str, str] = {}
        self._releases: set[str] = set()

    def hold(self, task_id: str, task: dict[str, Any]) -> None:
        """This process received ``task_id`` (``{"args", "kwargs"}``); written at
        the next :meth:`flush`."""
        record = self.liveness.hold_record(self.owner, task)
        with self._tracked_lock:
            self._holds[task_id] = record
            self._releases.discard(task_id)
            self._tracked[task_id] = time.monotonic()

    def release(self, task_id: str) -> None:
        """The task ended (whatever its outcome); its hold goes at the next
        :meth:`flush`, or is never written if it was not yet."""
        with self._tracked_lock:
            self._tracked.pop(task_id, None)
            if self._holds.pop(task_id, None) is None:
                self._releases.add(task_id)

    def flush(self, *, beat: bool = False) -> None:
        """Write the holds and releases since the last write, and with ``beat``
        the heartbeat, in one round trip.

        Raises:
            redis.RedisError: Redis is unreachable; nothing is lost, the next
                flush writes them (a release since then cancels its hold).
        """
        with self._tracked_lock:
            holds, self._holds = self._holds, {}
            releases, self._releases = self._releases, set()
        try:
            self.liveness.apply(holds, releases, beat=self.owner if beat else None)
        except redis.RedisError:
            with self._tracked_lock:
                for task_id, record in holds.items():
                    if task_id in self._releases:  # ended meanwhile: write neither
                        self._releases.discard(task_id)
                    else:
                        self._holds.setdefault(task_id, record)
                self._releases.update(t for t in releases if t not in self._holds)
            raise

    def reconcile(self, known: Callable[[], Collection[str]] | None = None) -> list[str]:
        """Release the holds of tasks this process no longer has.

        When the broker connection drops (a Redis restart), Celery's consumer
        forgets the messages it had prefetched but not started: they can no longer
        be acked on the old channel. No ``task_postrun`` ever fires for them, so
        their holds would say "a live worker has it" forever and the reaper would
        never return them; only the visibility timeout (half an hour) would. A
        hold older than one beat whose task is not among the worker's requests
        is such an orphan: releasing it lets the reaper give the message back.

        Args:
            known: The ids of the requests the worker has (reserved or running);
                Celery's worker state by default.

        Returns:
            The task ids released.

        Raises:
            redis.RedisError: Redis is unreachable; the holds stay tracked and the
                next beat tries again.
        """
        have = set(known() if known is not None else _worker_request_ids())
        cutoff = time.monotonic() - self.interval
        with self._tracked_lock:
            orphans = [t for t, since in self._tracked.items() if since < cutoff and t not in have]
        for task_id in orphans:
            self.release(task_id)
            log.warning(
                "task %s was dropped by this worker when its broker connection was lost; "
                "released so that it goes back to the queue",
                task_id,
            )
        if orphans:
            self.flush()
        return orphans

    def run(self) -> None:
        next_beat = 0.0
        while True:
            stopping = self._stop_event.is_set()
            try:
                due = not stopping and time.monotonic() >= next_beat
                if due:
                    next_beat = time.monotonic() + self.interval
                # The beat goes with the holds (one round trip), before them in
                # the pipeline: a hold whose owner has no heartbeat is a dead
                # process's to the stall detector.
                self.flush(beat=due)
                if due:
                    self.reconcile()
                    if self.liveness.take_reaper_turn(every=self.interval):
                        self.reap()
                        self.reclaim_slots()
                        self.check_stalls()
            except redis.RedisError as exc:
                log.warning("liveness: redis unavailable (%s); retrying", exc)
            if stopping:
                return
            self._stop_event.wait(min(self.flush_interval, self.interval))

    def reap(self) -> int:
        """Return every orphaned message to its queue; returns how many."""
        with self.app.connection_for_write() as conn:
            channel: Any = conn.default_channel
            client = self.liveness.client
            cutoff = time.time() - self.grace
            tags = [_text(t) for t in client.zrangebyscore(channel.unacked_index_key, 0, cutoff)]
            if not tags:
                return 0
            ids = dict(
                zip(tags, map(_task_id, client.hmget(channel.unacked_key, tags)), strict=True)
            )
            known = [i for i in ids.values() if i is not None]
            holders = self.liveness.holders(known)
            alive = self.liveness.alive(list(holders.values()))
            restored = 0
            for tag, task_id in ids.items():
                if task_id is None or holders.get(task_id) in alive:
                    continue
                log.warning(
                    "task %s was taken by a worker that is gone (%s); back to the queue",
                    task_id,
                    holders.get(task_id, "died before recording it"),
                )
                channel.qos.restore_by_tag(tag, client=client)
                self.liveness.release(task_id)
                restored += 1
            return restored

    def reclaim_slots(self) -> int:
        """Give back the endpoint slots of worker processes without a heartbeat
        (:func:`~verifleet.limits.reclaim_leases`); returns how many.

        Raises:
            redis.RedisError: Redis is unreachable (the next turn tries again).
        """
        released = reclaim_leases(
            self.liveness.client, prefix=self.liveness.prefix, alive=self.liveness.alive
        )
        if released:
            log.warning(
                "gave back %d endpoint slot(s) held by worker processes that are gone", released
            )
        return released

    def check_stalls(self) -> dict[str, int]:
        """Send again the missing units of stalled jobs (see :mod:`._stalls`)."""
        if self.stalls is None:
            return {}
        with self.app.connection_for_write() as conn:
            channel: Any = conn.default_channel
            return self.stalls.check(channel.unacked_key)

    def stop(self) -> None:
        """Stop beating (the heartbeat then expires after its TTL)."""
        self._stop_event.set()
