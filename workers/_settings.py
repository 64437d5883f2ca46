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
``VERIFLEET_KEEP_SLOTS``  seconds a finished model call's endpoint slot stays with
    its worker process for the process's next call to that endpoint (default 0.2;
    0: every slot goes back to Redis as its call ends). Keeping slots saves the
    fleet's Redis two scripts per model call; see ``verifleet.limits._pool``.
``VERIFLEET_UNIT_TRIES``  how many times a unit whose run kills or freezes its
    worker process is started before it is quarantined: failed with an error
    that says so, never run again (default 3; see ``verifleet.workers._quarantine``).
``VERIFLEET_JOB_KILLS``  how many worker processes a job's units may kill or
    freeze, each while running alone in its process (so the unit's own doing),
    before the job is stopped: marked ``failed`` with an error that says so, its
    remaining units dropped (default 3; see ``verifleet.workers._breaker``).
``VERIFLEET_STALL_SETTLE``  seconds a job with units left may go without progress
    while no message carries any of them, before its missing units are sent again
    (default 30; see ``verifleet.workers._stalls``).
``VERIFLEET_DRAIN_BATCH``  results per shard when a job's results are drained out of
    Redis (``submit --results-to``; default 5000): a running job keeps at most about
    this many finished results in Redis.
``VERIFLEET_DRAIN_INTERVAL``  seconds between two looks for results to drain (default 2).
``VERIFLEET_UNITS_PER_MESSAGE``  the most units of one job a feeder puts in one
    message (default 16; 1: a message per unit). Only fills of many units of a job
    (fast units, see ``verifleet.store._packing``) use more than one; a worker
    thread runs a message's units one after the other.
``VERIFLEET_FEED_SPREAD``  how many messages a job's share of one fill of the
    queue is cut into at least before a message carries more than one of its
    units (default 16): batching starts at fills of 32 units of a job, i.e. only
    when units are short. 1 packs every fill into messages of
    ``VERIFLEET_UNITS_PER_MESSAGE`` (tests use it).
``VERIFLEET_MESSAGE_SECONDS``  the most seconds of one thread's work a feeder puts
    in one message (default 4; a unit's time as the feeder's worker process
    measured it for that job, until then busy threads / units finished per
    second). Longer messages cost the broker less per unit; a job's share of the
    threads follows weight and submission changes about this much more slowly.
``VERIFLEET_UNITS_PER_STEP``  how many of a message's units a worker thread takes
    up at once (default 8; 1: one at a time). Each step is one Redis script that
    writes the previous step's results and marks the next units started. A
    worker that dies mid-step leaves each of the step's units with an unfinished
    start: they run alone when they come back (see
    ``verifleet.workers._isolation``), and a cancel stops a message at its next
    step.
"""

from __future__ import annotations

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["WorkerSettings"]

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
_PREFIX = "VERIFLEET_"


class WorkerSettings(BaseSettings):
    """What a worker process needs to know; each field from ``VERIFLEET_<FIELD>``.

    Constructed directly (tests, embedding) it takes keyword arguments and, for
    fields not given, the environment; an empty variable counts as unset.
    """

    model_config = SettingsConfigDict(env_prefix=_PREFIX, env_ignore_empty=True, frozen=True)

    redis_url: str = DEFAULT_REDIS_URL
    unit_deadline: float = Field(default=900.0, gt=0)
    restore_interval: int = Field(default=5, ge=1)
    prefix: str = "vf"
    lease_seconds: float = Field(default=150.0, gt=0)
    keep_slots: float = Field(default=0.2, ge=0)
    stall_settle: float = Field(default=30.0, gt=0)
    unit_tries: int = Field(default=3, ge=1)
    job_kills: int = Field(default=3, ge=1)
    drain_batch: int = Field(default=5000, ge=1)
    drain_interval: float = Field(default=2.0, gt=0)
    units_per_message: int = Field(default=16, ge=1, le=64)
    feed_spread: int = Field(default=16, ge=1)
    units_per_step: int = Field(default=8, ge=1, le=64)
    message_seconds: float = Field(default=4.0, gt=0)

    @classmethod
    def from_env(cls) -> WorkerSettings:
        """Read the settings from the environment.

        Raises:
            ValueError: a variable does not parse (the message names the variable
                and its value).
        """
        try:
            return cls()
        except ValidationError as exc:
            problems = []
            for error in exc.errors():
                name = _PREFIX + str(error["loc"][0]).upper()
                problems.append(f"{name}={error.get('input')!r}: {error['msg']}")
            raise ValueError("; ".join(problems)) from None

    @property
    def visibility_timeout(self) -> int:
        """Twice the unit deadline: longer than the longest task with its retries."""
        return int(2 * self.unit_deadline) + 1
