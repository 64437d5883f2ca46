"""What the store reports about jobs (status, progress, a unit's start) and a
finished unit's write."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import NamedTuple

from pydantic import BaseModel, Field

from verifleet.schemas import VerificationResult

from ._protocol import DEFAULT_QUEUE

__all__ = ["JobProgress", "JobStatus", "PairProgress", "UnfinishedJob", "UnitStart", "UnitWrite"]


class JobStatus(StrEnum):
    """Lifecycle of a job."""

    QUEUED = "queued"
    RUNNING = "running"
    CANCELLED = "cancelled"
    DONE = "done"
    FAILED = "failed"
    """Stopped by the fleet: its units killed or froze worker processes too
    often (``JobProgress.error`` says why); workers drop its queued units."""


class UnitStart(NamedTuple):
    """What :meth:`ResultStore.begin_unit` found as a worker took a unit up."""

    status: JobStatus | None
    """The job's status; None when the store does not know the job."""
    done: bool
    """The unit's results are written already (a redelivered task)."""
    template: dict[str, object] | None
    """The description of the asked template stored at submission, if any."""
    tries: int = 1
    """Which start of the unit this is: more than 1 when earlier starts never
    finished (their worker died or froze)."""


class UnitWrite(NamedTuple):
    """A finished unit's results, to be written under their keys
    (:meth:`ResultStore.step_units`)."""

    unit_key: str
    results: Sequence[VerificationResult]
    result_keys: Sequence[str]


class UnfinishedJob(NamedTuple):
    """A queued or running job with units left (:meth:`ResultStore.unfinished_jobs`)."""

    job_id: str
    done: int
    """Units done so far."""
    queue: str
    """The queue its units go to."""
    giving_out: bool
    """Its schedule still has units to send (they are not lost, only not sent yet)."""


class PairProgress(BaseModel):
    """Verdict counts of one (answering, parsing) model pair so far."""

    answering: str
    parsing: str
    passed: int = 0
    failed: int = 0
    errors: int = 0
    unverified: int = 0

    @property
    def pass_rate(self) -> float | None:
        """Passed over verified results; None before any verdict."""
        judged = self.passed + self.failed
        return self.passed / judged if judged else None


class JobProgress(BaseModel):
    """A snapshot of a job, read from its own keys (not from Flower)."""

    job_id: str
    name: str = ""
    status: JobStatus
    created: str = ""
    started_at: str = ""
    """When a worker took the job's first unit up (ISO 8601); empty before."""
    finished_at: str = ""
    """When its last unit finished (ISO 8601); empty before."""
    total_units: int = 0
    done_units: int = 0
    failed_units: int = 0
    in_flight: int = 0
    results: int = 0
    pairs: list[PairProgress] = Field(default_factory=list)
    total_scenarios: int = 0
    scenarios_done: int = 0
    scenario_errors: int = 0
    queue: str = DEFAULT_QUEUE
    weight: float = 1.0
    share: float | None = None
    """Its weight over the weights of the jobs of its queue still giving out
    units; None for a job whose units were all sent at submission."""
    error: str = ""
    """Why the fleet stopped a ``failed`` job; empty otherwise."""

    @property
    def finished(self) -> bool:
        """All units done, or the job was cancelled or failed."""
        return self.status in (JobStatus.DONE, JobStatus.CANCELLED, JobStatus.FAILED)
