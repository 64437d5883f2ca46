"""Packing a fill's units into messages: one per unit at low rates, up to
``max_per_message`` units of one job per message at high rates.

Each message costs the broker a push, a pop, kombu's unacked bookkeeping and an
ack (more Redis CPU than the rest of a unit's Redis work). A job gets ``k`` units per message only when the fill
gives it at least ``k * spread`` units, i.e. when units are short: a worker
thread then runs its message's units one after the other, and a message lasts
about ``spread`` times the fill's horizon divided by the fleet's threads.
Whatever the rate, messages of the queue end at about ``spread`` per horizon or
faster, so a new job's first units still start within seconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ._protocol import UnitBatchRef, UnitRef

__all__ = ["pack_units"]

_Labelled = tuple[UnitRef, dict[str, str]]


def pack_units(
    refs: Iterable[_Labelled],
    *,
    max_per_message: int,
    spread: int,
    largest: Mapping[str, int] | None = None,
) -> list[tuple[UnitRef | UnitBatchRef, dict[str, str]]]:
    """The messages for one fill's units, jobs in the order they first appear.

    Args:
        refs: The fill's units and their Flower labels, in claim order.
        max_per_message: The most units of one message (1: one message per unit).
        spread: How many messages a job's share of the fill is cut into at least
            before its messages grow past one unit.
        largest: A lower most per job, where one is given (``QueueFeeder``).

    Returns:
        A single unit's own :class:`UnitRef` where it goes alone (and every
        scenario unit), else a :class:`UnitBatchRef`, each with its labels (the
        first unit's, and how many units the message holds).
    """
    per_job: dict[str, list[_Labelled]] = {}
    for ref, labels in refs:
        per_job.setdefault(ref.job_id, []).append((ref, labels))
    messages: list[tuple[UnitRef | UnitBatchRef, dict[str, str]]] = []
    for job_id, units in per_job.items():
        questions = [(r, lab) for r, lab in units if r.kind == "question"]
        messages.extend((r, lab) for r, lab in units if r.kind != "question")
        most = min(max_per_message, (largest or {}).get(job_id, max_per_message))
        size = max(1, min(most, len(questions) // max(1, spread)))
        for start in range(0, len(questions), size):
            chunk = questions[start : start + size]
            if len(chunk) == 1:
                messages.append(chunk[0])
                continue
            first = chunk[0][1]
            labels = {**first, "units": str(len(chunk))}
            if "question_id" in first:
                labels["question_id"] = f"{first['question_id']} (+{len(chunk) - 1} more)"
            messages.append((UnitBatchRef.of([r for r, _ in chunk]), labels))
    return messages
