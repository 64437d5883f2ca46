"""The worker process's heartbeat, and the reaper that gives a dead worker's
messages back to the queue (see :mod:`verifleet.orchestrator.store` ``Liveness``).

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
from typing import Any

import redis
from celery import Celery

from verifleet.orchestrator.store import Liveness

__all__ = ["LivenessThread", "process_owner_id"]

log = logging.getLogger(__name__)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def process_owner_id() -> str:
    """A name for this worker process, unique across machines and restarts."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


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

    Redis errors are logged and retried at the next beat: the heartbeat must not
    kill the worker during a Redis restart.

    Args:
        grace: Seconds a message must have been out before it can be reaped; a
            live worker records a message within milliseconds of taking it.
    """

    def __init__(
        self,
        liveness: Liveness,
        owner: str,
        app: Celery,
        *,
        interval: float = 5.0,
        grace: float = 20.0,
    ) -> None:
        super().__init__(name="verifleet-liveness", daemon=True)
        self.liveness = liveness
        self.owner = owner
        self.app = app
        self.interval = interval
        self.grace = grace
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            try:
                self.liveness.beat(self.owner)
                if self.liveness.take_reaper_turn(every=self.interval):
                    self.reap()
            except redis.RedisError as exc:
                log.warning("liveness: redis unavailable (%s); retrying", exc)
            self._stop_event.wait(self.interval)

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

    def stop(self) -> None:
        """Stop beating (the heartbeat then expires after its TTL)."""
        self._stop_event.set()
