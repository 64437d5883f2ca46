"""The Celery app ``verifleet flower`` runs Flower with.

``celery -A verifleet.orchestrator._fleet.flower_app flower`` reads the broker from
``VERIFLEET_REDIS_URL`` (never from the command line, where ``ps`` would show its
password) and gets the same ``rediss://`` TLS options as the workers and the store
(:class:`~verifleet.store.RedisTarget`), so Flower's event consumer
and its queue-length view both verify the server.
"""

from __future__ import annotations

from celery import Celery

from verifleet.store import RedisTarget

from .job import redis_url_from

__all__ = ["app"]

app = Celery("verifleet-flower")
app.conf.update(
    **RedisTarget.parse(redis_url_from(None)).celery_settings(),
    broker_connection_retry_on_startup=True,
)
