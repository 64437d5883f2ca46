"""Worker settings from the environment, with the design's defaults.

``VERIFLEET_REDIS_URL``  broker and result store (default redis://127.0.0.1:6379/0)
``VERIFLEET_UNIT_DEADLINE``  seconds one unit may take (default 900); the broker's
    visibility timeout is twice that, so a message is never redelivered while its
    unit can still be running.
``VERIFLEET_RESTORE_INTERVAL``  seconds between scans for unacked messages of dead
    workers (default 5; kombu's default of 10 × throttle 10 means ~100 s).
``VERIFLEET_PREFIX``  key prefix in Redis (default ``vf``).
``VERIFLEET_LEASE_SECONDS``  how long a model call may hold its endpoint slot
    before the slot counts as abandoned by a dead worker (default 150: the default
    request timeout of 120 s plus a margin; raise it with the request timeout).
``VERIFLEET_STALL_SETTLE``  seconds a job with units left may go without progress
    while no message carries any of them, before its missing units are sent again
    (default 30; see ``verifleet.workers._stalls``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["WorkerSettings"]

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


@dataclass(frozen=True)
class WorkerSettings:
    """What a worker process needs to know."""

    redis_url: str = DEFAULT_REDIS_URL
    unit_deadline: float = 900.0
    restore_interval: int = 5
    prefix: str = "vf"
    lease_seconds: float = 150.0
    stall_settle: float = 30.0

    @classmethod
    def from_env(cls) -> WorkerSettings:
        """Read the settings; invalid numbers raise ``ValueError`` naming the variable."""
        env = os.environ

        def number(name: str, default: float) -> float:
            raw = env.get(name)
            if raw is None or raw == "":
                return default
            try:
                return float(raw)
            except ValueError:
                raise ValueError(f"{name}={raw!r} is not a number") from None

        return cls(
            redis_url=env.get("VERIFLEET_REDIS_URL") or DEFAULT_REDIS_URL,
            unit_deadline=number("VERIFLEET_UNIT_DEADLINE", 900.0),
            restore_interval=int(number("VERIFLEET_RESTORE_INTERVAL", 5)),
            prefix=env.get("VERIFLEET_PREFIX") or "vf",
            lease_seconds=number("VERIFLEET_LEASE_SECONDS", 150.0),
            stall_settle=number("VERIFLEET_STALL_SETTLE", 30.0),
        )

    @property
    def visibility_timeout(self) -> int:
        """Twice the unit deadline: longer than the longest task with its retries."""
        return int(2 * self.unit_deadline) + 1
