"""Which worker processes are alive, and which tasks a dead one left behind.

Kombu gives a dead worker's unacked messages back only after the broker's
visibility timeout (twice the unit deadline: half an hour by default). So that a
killed worker's units run again within seconds instead, every worker process
refreshes a short-lived heartbeat key and records each task it *receives* (running
or merely prefetched) under its own name. A live worker looks at the broker's
unacked messages: one that has been out for a while and is not held by a live
process (its holder's heartbeat expired, or it died between taking the message
and recording it) goes back to the queue. If the holder was only slow, not dead,
the unit runs twice: results are written once under their key, so the job still
ends with each result exactly once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Mapping

from ._replies import reply_text
from ._store import ResultStore

__all__ = ["Liveness"]


class Liveness:
    """Heartbeats of worker processes and the tasks they hold.

    Args:
        store: The result store (its client and key prefix).
        ttl: Seconds a heartbeat lasts; a process silent for longer is dead.
    """

    def __init__(self, store: ResultStore, *, ttl: float = 15.0) -> None:
        self.client = store.client
        self.prefix = store.prefix
        self.ttl = ttl
        self._held = f"{store.prefix}:held"

    def _beat_key(self, owner: str) -> str:
        return f"{self.prefix}:worker:{owner}"

    def beat(self, owner: str) -> None:
        """Say that ``owner`` is alive for the next ``ttl`` seconds."""
        self.client.set(self._beat_key(owner), "1", px=int(self.ttl * 1000))

    def forget(self, owner: str) -> None:
        """``owner`` is gone (its supervisor killed it): its heartbeat ends now,
        so the reaper need not wait for it to expire."""
        self.client.delete(self._beat_key(owner))

    @staticmethod
    def hold_record(owner: str, task: dict[str, object]) -> str:
        """The record of a task (``{"args", "kwargs"}``) that ``owner`` received
        now, for :meth:`apply`."""
        return json.dumps({"owner": owner, "task": task, "since": time.time()})

    def release(self, task_id: str) -> None:
        """The task ended (whatever its outcome): forget it."""
        self.client.hdel(self._held, task_id)

    def apply(
        self, holds: Mapping[str, str], releases: Collection[str], *, beat: str | None = None
    ) -> None:
        """Record many holds (task id -> :meth:`hold_record`) and releases, and
        ``beat`` for that owner (:meth:`beat`), in one round trip: what a worker
        process received and finished since it last wrote, and that it lives."""
        if not holds and not releases and beat is None:
            return
        pipe = self.client.pipeline(transaction=False)
        if beat is not None:
            pipe.set(self._beat_key(beat), "1", px=int(self.ttl * 1000))
        if holds:
            pipe.hset(self._held, mapping={task_id: record for task_id, record in holds.items()})
        if releases:
            pipe.hdel(self._held, *releases)
        pipe.execute()

    def take_reaper_turn(self, *, every: float) -> bool:
        """True for at most one caller across the fleet per ``every`` seconds."""
        key = f"{self.prefix}:reaper"
        return bool(self.client.set(key, "1", nx=True, px=int(every * 1000)))

    def holders(self, task_ids: list[str]) -> dict[str, str]:
        """The owner recorded for each of ``task_ids`` that some process holds."""
        if not task_ids:
            return {}
        raw = self.client.hmget(self._held, task_ids)
        return {
            task_id: json.loads(reply_text(rec))["owner"]
            for task_id, rec in zip(task_ids, raw, strict=True)
            if rec is not None
        }

    def alive(self, owners: list[str]) -> set[str]:
        """Those of ``owners`` whose heartbeat has not expired."""
        unique = sorted(set(owners))
        if not unique:
            return set()
        pipe = self.client.pipeline(transaction=False)
        for owner in unique:
            pipe.exists(self._beat_key(owner))
        return {o for o, exists in zip(unique, pipe.execute(), strict=True) if exists}
