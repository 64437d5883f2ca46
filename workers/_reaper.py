"""The worker process's heartbeat, and the reaper that re-sends tasks whose
worker died (see :mod:`verifleet.orchestrator.store` ``Liveness``)."""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid

import redis
from celery import Celery

from verifleet.orchestrator.store import DEFAULT_QUEUE, TASK_NAME, Liveness

__all__ = ["LivenessThread", "process_owner_id"]

log = logging.getLogger(__name__)


def process_owner_id() -> str:
    """A name for this worker process, unique across machines and restarts."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class LivenessThread(threading.Thread):
    """Beats every ``interval`` seconds; every few beats, if it wins the fleet-wide
    reaper turn, re-enqueues the units of dead workers.

    Redis errors are logged and retried at the next beat: the heartbeat must not
    kill the worker during a Redis restart.
    """

    def __init__(
        self, liveness: Liveness, owner: str, app: Celery, *, interval: float = 5.0
    ) -> None:
        super().__init__(name="verifleet-liveness", daemon=True)
        self.liveness = liveness
        self.owner = owner
        self.app = app
        self.interval = interval
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
        """Re-enqueue every orphaned unit this call claims; returns how many."""
        count = 0
        for orphan in self.liveness.orphans(grace=self.liveness.ttl):
            if not self.liveness.claim(orphan):
                continue
            log.warning(
                "worker %s is gone; re-enqueueing task %s %s",
                orphan.owner,
                orphan.task_id,
                orphan.task.get("args"),
            )
            self.app.send_task(
                TASK_NAME,
                args=orphan.task.get("args", []),
                kwargs=orphan.task.get("kwargs", {}),
                queue=DEFAULT_QUEUE,
            )
            count += 1
        return count

    def stop(self) -> None:
        """Stop beating (the heartbeat then expires after its TTL)."""
        self._stop_event.set()
