"""What the orchestrator and the workers agree on: the task name, the queue and the
shape of a unit reference. The orchestrator sends work by task *name* only."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "BATCH_TASK_NAME",
    "DEFAULT_QUEUE",
    "REWARD_TASK_NAME",
    "SCENARIO_TASK_NAME",
    "TASK_NAME",
    "TASK_NAMES",
    "RolloutRef",
    "UnitBatchRef",
    "UnitRef",
]

TASK_NAME = "verifleet.run_unit"
SCENARIO_TASK_NAME = "verifleet.run_scenario"
BATCH_TASK_NAME = "verifleet.run_units"
#: The task that scores one rollout of a reward job (not a unit: the reaper and
#: the feeders never see it).
REWARD_TASK_NAME = "verifleet.score_rollout"
TASK_NAMES = frozenset({TASK_NAME, SCENARIO_TASK_NAME, BATCH_TASK_NAME})
"""Every task that runs a unit of a job (its first argument is the job id)."""
DEFAULT_QUEUE = "verifleet"


class UnitRef(BaseModel):
    """A unit by position in the stored job: tasks carry keys, not payloads.

    A scenario unit (``kind="scenario"``) has the scenario's position in
    ``question_index`` and goes to :data:`SCENARIO_TASK_NAME`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    job_id: str
    question_index: int
    answering_index: int
    replicate: int
    kind: Literal["question", "scenario"] = "question"

    @property
    def task_name(self) -> str:
        """The task that runs this unit."""
        return SCENARIO_TASK_NAME if self.kind == "scenario" else TASK_NAME

    def task_args(self) -> list[object]:
        """Positional arguments of the task message."""
        return [self.job_id, self.question_index, self.answering_index, self.replicate]


class UnitBatchRef(BaseModel):
    """Several question units of one job in one message, run one after the other
    by one worker thread (:data:`BATCH_TASK_NAME`).

    The broker's own work per message (kombu's push, pop, unacked bookkeeping and
    ack: more than the rest of a unit's Redis work) is then paid once for all.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    job_id: str
    units: tuple[tuple[int, int, int], ...]
    """``(question index, answering index, replicate)`` of each unit, in order."""

    @property
    def task_name(self) -> str:
        """The task that runs these units."""
        return BATCH_TASK_NAME

    def task_args(self) -> list[object]:
        """Positional arguments of the task message."""
        return [self.job_id, [list(u) for u in self.units]]

    @classmethod
    def of(cls, refs: list[UnitRef]) -> UnitBatchRef:
        """The batch of ``refs`` (question units of one job).

        Raises:
            ValueError: ``refs`` is empty, mixes jobs or holds a scenario unit.
        """
        if not refs or any(r.job_id != refs[0].job_id or r.kind != "question" for r in refs):
            raise ValueError("a batch holds question units of one job")
        units = tuple((r.question_index, r.answering_index, r.replicate) for r in refs)
        return cls(job_id=refs[0].job_id, units=units)


class RolloutRef(BaseModel):
    """One rollout of a reward job (``verifleet reward --redis``), by its key in the
    job's rollouts hash (:class:`~verifleet.store.RewardJobKeys`); scored by
    :data:`REWARD_TASK_NAME`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    job_id: str
    key: str

    @property
    def task_name(self) -> str:
        """The task that scores this rollout."""
        return REWARD_TASK_NAME

    def task_args(self) -> list[object]:
        """Positional arguments of the task message."""
        return [self.job_id, self.key]
