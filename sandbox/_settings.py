"""How the sandbox runs: isolation mode, pool size, limits; read from the environment.

The variables (``VERIFLEET_SANDBOX``, ``VERIFLEET_SANDBOX_*``), their defaults and
what each trades are documented once: docs/security.md, "Other settings"
(tests/unit/test_settings_documented.py checks that every variable read here is
listed there). Anything weaker than the ``strict`` mode is an explicit operator
downgrade.
"""

from __future__ import annotations

import os
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from verifleet.schemas import ConfigError, ResultLimits

__all__ = ["SandboxMode", "SandboxSettings"]


class SandboxMode(StrEnum):
    """Isolation layers an executor starts under (strongest first)."""

    STRICT = "strict"
    SECCOMP = "seccomp"
    RLIMITS_ONLY = "rlimits-only"

    @property
    def uses_seccomp(self) -> bool:
        """Whether executors install the seccomp filter."""
        return self in (SandboxMode.STRICT, SandboxMode.SECCOMP)


ENV_MODE = "VERIFLEET_SANDBOX"
ENV_POOL = "VERIFLEET_SANDBOX_POOL"
ENV_TIMEOUT = "VERIFLEET_SANDBOX_TIMEOUT"
ENV_MEMORY = "VERIFLEET_SANDBOX_MEMORY_MB"
ENV_CPU = "VERIFLEET_SANDBOX_CPU"
ENV_FRESH = "VERIFLEET_SANDBOX_FRESH"

#: What gets a fresh process: every call, or every (job, template).
FreshState = Literal["call", "template", "job"]


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
        max_templates: Template sources an executor keeps (LRU).
        result_limits: Largest ground truth, parsed values, verification output
            and judge schema the host accepts from an executor (and largest
            model response the pipeline keeps).
        template_processes: Template processes an executor keeps warm (one per
            job and template; LRU: a template beyond them is compiled again
            in a fresh one) once their units evaluated; up to 48 more are kept
            while their units wait for the model (described, not evaluated).
        templates_per_process: With ``fresh_state="job"``, templates one job's
            template process compiles before it is replaced by a fresh one
            (each compiled class stays in its process: ~28 KB each, so a job
            of 30,000 templates would otherwise reach the executor's memory
            limit).
        fresh_state: ``template`` (the default): calls run in their
            template's process (one per job and template), so no question's
            code runs where another's did; ``call``: each call runs in a
            process forked from it; ``job``: one template process per job,
            shared by its templates (cheaper by a fork per question, for
            benchmarks whose questions' code comes from one trusted author).
        bytecode_dir: A folder of bytecode the host prepares and executors
            start from (``-X pycache_prefix``, see ``_bytecode``); None: they
            compile their modules from source. :meth:`from_env` sets the
            default folder unless ``VERIFLEET_SANDBOX_BYTECODE=0``.
    """

    model_config = ConfigDict(frozen=True)

    mode: SandboxMode = SandboxMode.STRICT
    pool_size: int = Field(default=2, ge=1, le=64)
    timeout: float = Field(default=10.0, gt=0)
    memory_mb: int = Field(default=1024, ge=256)
    cpu_seconds: float | None = Field(default=None, gt=0)
    max_templates: int = Field(default=1024, ge=1)
    result_limits: ResultLimits = Field(default_factory=ResultLimits)
    template_processes: int = Field(default=16, ge=1, le=256)
    templates_per_process: int = Field(default=512, ge=1)
    fresh_state: FreshState = "template"
    bytecode_dir: str | None = None

    @property
    def cpu_per_call(self) -> int:
        """Whole CPU seconds per call (at least 1)."""
        return max(1, int(self.cpu_seconds if self.cpu_seconds is not None else self.timeout))

    @property
    def host_timeout(self) -> float:
        """Seconds the host waits for an executor's answer before killing it: the
        executor enforces ``timeout`` on each call itself (twice that for a call
        that compiles its template first); this is the backstop."""
        return 2 * (self.timeout + 2.0) + 5.0

    @classmethod
    def from_env(
        cls, mode: str | SandboxMode | None = None, *, fresh_default: FreshState = "template"
    ) -> SandboxSettings:
        """Settings from the ``VERIFLEET_SANDBOX*`` variables; ``mode`` overrides
        ``VERIFLEET_SANDBOX`` when given (the CLI's ``--sandbox``);
        ``fresh_default`` is the fresh state when ``VERIFLEET_SANDBOX_FRESH`` is
        unset (``verifleet serve`` passes ``job``).

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
        from ._bytecode import default_bytecode_dir  # the host's concern alone

        cpu_raw = os.environ.get(ENV_CPU, "").strip()
        fresh = os.environ.get(ENV_FRESH, "").strip() or fresh_default
        if fresh not in ("call", "template", "job"):
            raise ConfigError(f"{ENV_FRESH}={fresh!r} is unknown (choose call, template or job)")
        return cls(
            fresh_state=fresh,
            mode=parsed,
            pool_size=int(_env_number(ENV_POOL, 2, integer=True)),
            timeout=_env_number(ENV_TIMEOUT, 10.0),
            memory_mb=int(_env_number(ENV_MEMORY, 1024, integer=True)),
            cpu_seconds=_env_number(ENV_CPU, 10.0) if cpu_raw else None,
            result_limits=ResultLimits.from_env(),
            bytecode_dir=default_bytecode_dir(),
        )
