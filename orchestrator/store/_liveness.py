"""Which worker processes are alive, and which tasks a dead one left behind.

Kombu gives a dead worker's unacked messages back only after the broker's
visibility timeout (twice the unit deadline: half an hour by default). So that a
killed worker's units run again within seconds instead, every worker process
refreshes a short-lived heartbeat key and records each task it *receives* (running
or merely prefetched) under its own name; a live worker that finds a recorded task
whose owner's heartbeat has expired sends it again. If the owner was only slow,
not dead, the unit runs twice: results are written once under their key, so the
job still ends with each result exactly once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ._store import ResultStore, _text

__all__ = ["Liveness", "Orphan"]


@dataclass(frozen=True)
class Orphan:
    """A task received by a worker process that is gone."""

    task_id: str
    owner: str
    task: dict[str, Any]


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

    def hold(self, task_id: str, owner: str, task: dict[str, Any]) -> None:
        """Record that ``owner`` received task ``task_id`` (``{"args", "kwargs"}``)."""
        record = {"owner": owner, "task": task, "since": time.time()}
        self.client.hset(self._held, task_id, json.dumps(record))

    def release(self, task_id: str) -> None:
        """The task ended (whatever its outcome): forget it."""
        self.client.hdel(self._held, task_id)

    def take_reaper_turn(self, *, every: float) -> bool:
        """True for at most one caller across the fleet per ``every`` seconds."""
        key = f"{self.prefix}:reaper"
        return bool(self.client.set(key, "1", nx=True, px=int(every * 1000)))

    def orphans(self, *, grace: float) -> Iterator[Orphan]:
        """Tasks held for more than ``grace`` seconds by owners that are dead."""
        cutoff = time.time() - grace
        held = [
            (_text(task_id), json.loads(_text(raw)))
            for task_id, raw in self.client.hscan_iter(self._held, count=1000)
        ]
        held = [(task_id, rec) for task_id, rec in held if rec["since"] <= cutoff]
        owners = sorted({rec["owner"] for _task_id, rec in held})
        if not owners:
            return
        pipe = self.client.pipeline(transaction=False)
        for owner in owners:
            pipe.exists(self._beat_key(owner))
        alive = {o for o, exists in zip(owners, pipe.execute(), strict=True) if exists}
        for task_id, rec in held:
            if rec["owner"] not in alive:
                yield Orphan(task_id, rec["owner"], rec["task"])

    def claim(self, orphan: Orphan) -> bool:
        """Forget the orphan; True for exactly one claimant, who re-sends it."""
        return bool(self.client.hdel(self._held, orphan.task_id))
