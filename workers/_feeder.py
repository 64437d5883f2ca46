"""The thread that keeps this worker's queues fed from their schedules."""

from __future__ import annotations

import logging
import threading

import redis

from verifleet.store import QueueFeeder

__all__ = ["FeederThread"]

log = logging.getLogger(__name__)


class FeederThread(threading.Thread):
    """Every ``interval`` seconds, tops each of this worker's queues up from its
    schedule (:class:`~verifleet.store.QueueFeeder`). While every queue holds
    more than the next fill waits for, it looks again after half the time the
    queue takes to drain that far at the measured rate (at most
    ``max_interval``): each look is a Redis round trip per queue and process,
    which at an idle Redis costs about as much as a unit's own writes.

    Redis errors are logged and retried at the next turn: feeding must not kill
    the worker during a Redis restart; what was claimed and not sent is found by
    the stall detector.
    """

    def __init__(
        self, feeders: list[QueueFeeder], *, interval: float = 0.2, max_interval: float = 1.0
    ) -> None:
        super().__init__(name="verifleet-feeder", daemon=True)
        self.feeders = feeders
        self.interval = interval
        self.max_interval = max_interval
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            for feeder in self.feeders:
                try:
                    feeder.feed()
                except redis.RedisError as exc:
                    log.warning("feeder %s: redis unavailable (%s); retrying", feeder.queue, exc)
                except Exception:  # a bug must not stop the feeding for good
                    log.exception("feeder %s failed; retrying", feeder.queue)
            self._stop_event.wait(self.next_wait())

    def next_wait(self) -> float:
        """Seconds until the next look: ``interval``, or longer while every
        queue is calm (see the class docstring)."""
        calm = min((feeder.calm_for for feeder in self.feeders), default=0.0)
        return min(self.max_interval, max(self.interval, calm / 2))

    def stop(self) -> None:
        """Stop after the current turn."""
        self._stop_event.set()
