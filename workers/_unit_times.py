"""How long a unit of each job takes a thread of this process, as measured.

The feeder (:class:`verifleet.store.QueueFeeder`) packs a message with at most
``VERIFLEET_MESSAGE_SECONDS`` of one thread's work. Without a measurement it
estimates a unit's time from the fleet's rate and its busy threads (Little's
law), which lags while a job starts: the rate is still climbing, so units look
long and go one per message. A unit's own time, measured where it runs, is
right from a job's first finished units on; the feeder of this process uses it
for every fill it makes, whichever process runs the units (a fleet's workers
run the same units alike).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

__all__ = ["UnitTimes"]


class UnitTimes:
    """Seconds per unit of each job, smoothed over its recent units.

    Args:
        weight: How much one new unit moves the mean (exponential smoothing).
        max_jobs: How many jobs are remembered (the least recently timed go).
    """

    def __init__(self, *, weight: float = 0.2, max_jobs: int = 256) -> None:
        self.weight = weight
        self.max_jobs = max_jobs
        self._lock = threading.Lock()
        self._seconds: OrderedDict[str, float] = OrderedDict()

    def record(self, job_id: str, seconds: float) -> None:
        """Count one unit of ``job_id`` that took ``seconds`` of its thread."""
        with self._lock:
            before = self._seconds.pop(job_id, None)
            self._seconds[job_id] = (
                seconds if before is None else before + (seconds - before) * self.weight
            )
            while len(self._seconds) > self.max_jobs:
                self._seconds.popitem(last=False)

    def get(self, job_id: str) -> float | None:
        """The job's smoothed seconds per unit, None before its first unit here."""
        with self._lock:
            return self._seconds.get(job_id)
