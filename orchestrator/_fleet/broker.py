"""A thin Celery *client* for sending units by task name.

The orchestrator never imports the workers' code: it sends messages named
``verifleet.run_unit`` through one shared producer, in bounded batches (no
chords, no big ``group()``: a large group's result pub/sub was dropped by
Redis for its output buffer and hung a run).
"""

from __future__ import annotations

from collections.abc import Iterable

from verifleet.store import DEFAULT_QUEUE, UnitRef, client_app, send_units

__all__ = ["Broker"]


class Broker:
    """Sends unit tasks to the workers' queue on ``redis_url``.

    Raises:
        ConfigError: a malformed URL or TLS option (see ``RedisTarget``).
    """

    def __init__(self, redis_url: str, *, queue: str = DEFAULT_QUEUE) -> None:
        self.queue = queue
        self.app = client_app("verifleet-client", redis_url)

    def send(
        self,
        units: Iterable[tuple[UnitRef, dict[str, str]]],
        *,
        batch_size: int = 500,
        queue: str | None = None,
    ) -> int:
        """Send one task per unit to ``queue`` (by default the broker's); returns
        how many were sent.

        Raises:
            redis.RedisError: as :func:`~verifleet.store.send_units`.
        """
        return send_units(self.app, units, queue=queue or self.queue, batch_size=batch_size)

    def close(self) -> None:
        """Release broker connections."""
        self.app.close()
