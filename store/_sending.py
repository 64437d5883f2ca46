"""Sending unit tasks through a Celery app, by task name, in bounded batches.

Shared by the orchestrator's submit/resume and the workers' stall detector, so
that a unit is sent the same way whoever sends it.
"""

from __future__ import annotations

from collections.abc import Iterable

from celery import Celery

from ._protocol import UnitBatchRef, UnitRef

_Ref = UnitRef | UnitBatchRef

__all__ = ["send_units"]


def send_units(
    app: Celery,
    units: Iterable[tuple[_Ref, dict[str, str]]],
    *,
    queue: str,
    batch_size: int = 500,
) -> int:
    """Send one task per unit (or per batch of units) to ``queue``; returns how
    many messages were sent.

    Memory stays flat: units are consumed lazily and each batch goes to Redis as
    one pipeline through one producer (kombu's publish batch), not one round
    trip and one client object per message, which measured here was most of a
    submit's CPU time. No chords and no ``group()``
    (why: ``orchestrator/_fleet/broker.py``).

    Raises:
        redis.RedisError: the broker is unreachable; messages of the batch in
            hand are not sent (earlier batches are).
    """
    sent = 0
    batch: list[tuple[_Ref, dict[str, str]]] = []
    for item in units:
        batch.append(item)
        if len(batch) >= batch_size:
            sent += _send_batch(app, batch, queue)
            batch = []
    if batch:
        sent += _send_batch(app, batch, queue)
    return sent


def _send_batch(app: Celery, batch: list[tuple[_Ref, dict[str, str]]], queue: str) -> int:
    with app.producer_or_acquire() as producer, producer.batch(max_size=len(batch)):
        for ref, labels in batch:
            app.send_task(
                ref.task_name, args=ref.task_args(), kwargs=labels, queue=queue, producer=producer
            )
    return len(batch)
