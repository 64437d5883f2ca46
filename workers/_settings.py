"""Worker settings from the environment (``VERIFLEET_<FIELD>``), with the design's defaults.

What each variable means, and its default, is documented once: docs/fleet.md,
"Settings" (tests/unit/test_worker_settings.py checks that table lists every
field with the default given here).
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
