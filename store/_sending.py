"""The fleet's client: sending tasks through a Celery app, by task name, in bounded
batches.

Shared by the orchestrator's submit/resume/reverify, ``verifleet reward --redis``
(:class:`Broker`) and the workers' stall detector (:func:`send_units` on the
workers' own app), so that a task is sent the same way whoever sends it. The
senders never import the workers' code: they send messages by name through one
shared producer, in bounded batches (no chords, no big ``group()``: a large
group's result pub/sub was dropped by Redis for its output buffer and hung a run).
"""

from __future__ import annotations

from collections.abc import Iterable

from celery import Celery

from ._celery import client_app
from ._protocol import DEFAULT_QUEUE, RolloutRef, UnitBatchRef, UnitRef

_Ref = UnitRef | UnitBatchRef | RolloutRef

__all__ = ["Broker", "send_units"]


class Broker:
    """Sends tasks to the workers' queue on ``redis_url``.

    Raises:
        ConfigError: a malformed URL or TLS option (see ``RedisTarget``).
    """

    def __init__(self, redis_url: str, *, queue: str = DEFAULT_QUEUE) -> None:
        self.queue = queue
        self.app = client_app("verifleet-client", redis_url)

    def send(
        self,
        units: Iterable[tuple[_Ref, dict[str, str]]],
        *,
        batch_size: int = 500,
        queue: str | None = None,
    ) -> int:
        """Send one task per unit, batch of units or rollout to ``queue`` (by
        default the broker's); returns how many were sent.

        Raises:
            redis.RedisError: as :func:`send_units`.
        """
        return send_units(self.app, units, queue=queue or self.queue, batch_size=batch_size)

    def close(self) -> None:
        """Release broker connections."""
        self.app.close()


def send_units(
    app: Celery,
    units: Iterable[tuple[_Ref, dict[str, str]]],
    *,
    queue: str,
    batch_size: int = 500,
) -> int:
    """Send one task per unit (or per batch of units, or per rollout) to ``queue``;
    returns how many messages were sent.

    Memory stays flat: units are consumed lazily and each batch goes to Redis as
    one pipeline through one producer (kombu's publish batch), not one round
    trip and one client object per message. No chords and no ``group()`` (why: this module's
    docstring).

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
