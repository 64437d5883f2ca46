"""Redis key names of one job (all under ``vf:job:<id>:``) and of one reward job
(``vf:reward:<id>:``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "JOBS_INDEX",
    "MAX_JOB_ID_LENGTH",
    "JobKeys",
    "RewardJobKeys",
    "job_id_problem",
    "job_id_taken",
]

JOBS_INDEX = "vf:jobs"

#: The longest job id accepted.
MAX_JOB_ID_LENGTH = 128

# Letters, digits, '.', '_' and '-', starting with a letter or digit: a job id
# names a folder under a results root (``<root>/<job id>/``) and a Redis key
# segment, so '/', '\\', ':', '..', whitespace and control characters are out.
_JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def job_id_problem(job_id: object) -> str | None:
    """What is wrong with ``job_id`` as a job id, or None when it is fine.

    A job id is 1 to :data:`MAX_JOB_ID_LENGTH` characters of ASCII letters,
    digits, ``.``, ``_`` and ``-``, starts with a letter or digit and holds no
    ``..`` (generated ids such as ``20261122-093012-a1b2c3`` always pass).
    Checked at submission and again by the worker that writes the job's shards.
    Never raises.
    """
    if not isinstance(job_id, str) or not job_id:
        return "job id: must be a non-empty string"
    shown = repr(job_id if len(job_id) <= 60 else job_id[:60] + "...")
    if len(job_id) > MAX_JOB_ID_LENGTH:
        return f"job id {shown}: longer than {MAX_JOB_ID_LENGTH} characters"
    if not _JOB_ID.fullmatch(job_id) or ".." in job_id:
        return (
            f"job id {shown}: use only letters, digits, '.', '_' and '-', starting "
            "with a letter or digit (no '/', '..', ':', spaces or control characters)"
        )
    return None


@dataclass(frozen=True)
class JobKeys:
    """Every key a job uses; ``prefix`` lets tests and tenants share a server."""

    job_id: str
    prefix: str = "vf"

    def _k(self, name: str) -> str:
        return f"{self.prefix}:job:{self.job_id}:{name}"

    @property
    def meta(self) -> str:
        """Hash: status, created, totals, names."""
        return self._k("meta")

    @property
    def spec(self) -> str:
        """Hash: compressed benchmark and config JSON, stored once per job."""
        return self._k("spec")

    @property
    def templates(self) -> str:
        """Hash: template id → compressed description JSON (what an executor said
        of the template at submission), so that workers need not ask again."""
        return self._k("templates")

    @property
    def results(self) -> str:
        """Hash: result key → compressed result JSON (written once)."""
        return self._k("results")

    @property
    def scenarios(self) -> str:
        """Hash: scenario unit key → compressed ScenarioExecutionResult JSON (written once)."""
        return self._k("scenarios")

    @property
    def scenario_errors(self) -> str:
        """Set: scenario units whose run ended in status ``error``."""
        return self._k("scenario_errors")

    @property
    def shards(self) -> str:
        """Hash: shard URL → how many results it holds, for results drained out of
        Redis (``--results-to``); only shards listed here are ever read."""
        return self._k("shards")

    @property
    def drain_lock(self) -> str:
        """String: the drainer working on this job now (a token with a TTL)."""
        return self._k("drain_lock")

    @property
    def done(self) -> str:
        """Set: units whose results are all written."""
        return self._k("done")

    @property
    def failed(self) -> str:
        """Set: units with at least one errored result."""
        return self._k("failed")

    @property
    def inflight(self) -> str:
        """Sorted set: unit → start time, for units being worked on now."""
        return self._k("inflight")

    @property
    def attempts(self) -> str:
        """Hash: unit → how many times it was started again before its first
        start finished (a worker running it died or froze); only such units have
        an entry; ``<unit>#alone`` fields count its starts that ran with no
        other unit in their process (what quarantines a unit that kills its
        workers)."""
        return self._k("attempts")

    @property
    def pairs(self) -> str:
        """Hash: pair id → "answering\\tparsing" display strings."""
        return self._k("pairs")

    @property
    def verdict_prefix(self) -> str:
        """What every verdict set's key starts with (``verdict_prefix + pair id +
        ":" + verdict``; the progress script builds them so)."""
        return self._k("verdict:")

    def verdicts(self, pair_id: str, verdict: str) -> str:
        """Set of result keys of one model pair with one verdict (pass/fail/error)."""
        return f"{self.verdict_prefix}{pair_id}:{verdict}"


@dataclass(frozen=True)
class RewardJobKeys:
    """Redis keys of one reward job (``verifleet reward --redis``: rollouts scored
    by the workers), all under ``<prefix>:reward:<id>:``."""

    job_id: str
    prefix: str = "vf"

    def _k(self, name: str) -> str:
        return f"{self.prefix}:reward:{self.job_id}:{name}"

    @property
    def spec(self) -> str:
        """Hash: compressed benchmark, judges and reward config JSON."""
        return self._k("spec")

    @property
    def rollouts(self) -> str:
        """Hash: rollout key → compressed rollout JSON."""
        return self._k("rollouts")

    @property
    def scores(self) -> str:
        """Hash: rollout key → verdict fields JSON (written once)."""
        return self._k("scores")


def job_id_taken(job_id: str) -> str:
    """The message for a submission whose job id an existing job holds: what to
    do instead."""
    return (
        f"job id {job_id!r} is taken: a job with this id exists. Choose a new "
        f"--job-id, run the existing job's missing units with `verifleet resume "
        f"{job_id}`, or free the id with `verifleet delete {job_id}`"
    )
