"""How the sandbox runs: isolation mode, pool size, limits; read from the environment.

Environment variables (all optional):

- ``VERIFLEET_SANDBOX``: ``strict`` (default: bubblewrap namespaces + seccomp +
  rlimits), ``seccomp`` (no bubblewrap: for containers without user namespaces,
  where the container is the filesystem boundary), ``rlimits-only`` (a separate
  process with rlimits and the wall-clock kill only). Anything weaker than
  ``strict`` is an explicit operator downgrade.
- ``VERIFLEET_SANDBOX_POOL``: executor processes per host process (default 2).
- ``VERIFLEET_SANDBOX_TIMEOUT``: wall-clock seconds per call before the executor
  is killed (default 10).
- ``VERIFLEET_SANDBOX_MEMORY_MB``: address-space limit of an executor (default 1024).
- ``VERIFLEET_SANDBOX_CPU``: CPU seconds per call (default: the timeout).
- ``VERIFLEET_RESULT_MAX_*``: what an answer from an executor may put into a
  result (:class:`~verifleet.schemas.ResultLimits`).
"""

from __future__ import annotations

import os
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from verifleet.schemas import ConfigError, ResultLimits

__all__ = ["SandboxMode", "SandboxSettings"]


class SandboxMode(StrEnum):
    """Isolation layers an executor starts under (strongest first)."""

    STRICT = "strict"
    SECCOMP = "seccomp"
    RLIMITS_ONLY = "rlimits-only"

    @property
    def uses_bwrap(self) -> bool:
        """Whether executors start inside bubblewrap namespaces."""
        return self is SandboxMode.STRICT

    @property
    def uses_seccomp(self) -> bool:
        """Whether executors install the seccomp filter."""
        return self in (SandboxMode.STRICT, SandboxMode.SECCOMP)


ENV_MODE = "VERIFLEET_SANDBOX"
ENV_POOL = "VERIFLEET_SANDBOX_POOL"
ENV_TIMEOUT = "VERIFLEET_SANDBOX_TIMEOUT"
ENV_MEMORY = "VERIFLEET_SANDBOX_MEMORY_MB"
ENV_CPU = "VERIFLEET_SANDBOX_CPU"


def _env_number(name: str, default: float, *, integer: bool = False) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None
    if value <= 0:
        raise ConfigError(f"{name}={raw!r} must be positive")
    return value


class SandboxSettings(BaseModel):
    """Settings of one :class:`~verifleet.sandbox.SandboxPool`.

    Attributes:
        mode: Isolation layers (see :class:`SandboxMode`).
        pool_size: Executor processes (started lazily, replaced when they die).
        timeout: Wall-clock seconds one call may take; the executor is killed after.
        memory_mb: RLIMIT_AS of an executor, in MiB.
        cpu_seconds: CPU seconds one call may use (RLIMIT_CPU, re-armed per call).
        max_templates: Compiled templates an executor keeps (LRU).
        result_limits: Largest ground truth, parsed values, verification output
            and judge schema the host accepts from an executor (and largest
            model response the pipeline keeps).
    """

    model_config = ConfigDict(frozen=True)

    mode: SandboxMode = SandboxMode.STRICT
    pool_size: int = Field(default=2, ge=1, le=64)
    timeout: float = Field(default=10.0, gt=0)
    memory_mb: int = Field(default=1024, ge=256)
    cpu_seconds: float | None = Field(default=None, gt=0)
    max_templates: int = Field(default=1024, ge=1)
    result_limits: ResultLimits = Field(default_factory=ResultLimits)

    @property
    def cpu_per_call(self) -> int:
        """Whole CPU seconds per call (at least 1)."""
        return max(1, int(self.cpu_seconds if self.cpu_seconds is not None else self.timeout))

    @classmethod
    def from_env(cls, mode: str | SandboxMode | None = None) -> SandboxSettings:
        """Settings from the ``VERIFLEET_SANDBOX*`` variables; ``mode`` overrides
        ``VERIFLEET_SANDBOX`` when given (the CLI's ``--sandbox``).

        Raises:
            ConfigError: An unknown mode or a non-positive number (also of a
                ``VERIFLEET_RESULT_MAX_*`` limit).
        """
        raw_mode = mode if mode is not None else os.environ.get(ENV_MODE, "") or "strict"
        try:
            parsed = SandboxMode(raw_mode)
        except ValueError:
            choices = ", ".join(m.value for m in SandboxMode)
            raise ConfigError(f"sandbox mode {raw_mode!r} is unknown (choose {choices})") from None
        cpu_raw = os.environ.get(ENV_CPU, "").strip()
        return cls(
            mode=parsed,
            pool_size=int(_env_number(ENV_POOL, 2, integer=True)),
            timeout=_env_number(ENV_TIMEOUT, 10.0),
            memory_mb=int(_env_number(ENV_MEMORY, 1024, integer=True)),
            cpu_seconds=_env_number(ENV_CPU, 10.0) if cpu_raw else None,
            result_limits=ResultLimits.from_env(),
        )
