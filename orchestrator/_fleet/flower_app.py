"""The Celery app ``verifleet flower`` runs Flower with.

``celery -A verifleet.orchestrator._fleet.flower_app flower`` reads the broker from
``VERIFLEET_REDIS_URL`` (never from the command line, where ``ps`` would show its
password) and gets the same ``rediss://`` TLS options as the workers and the store
(:class:`~verifleet.store.RedisTarget`), so Flower's event consumer
and its queue-length view both verify the server.
"""

from __future__ import annotations

import os

from verifleet.store import celery_app

__all__ = ["app"]

# `verifleet flower` always sets the URL. Without it (a plain import, as the tests'
# import-everything check does) the app stays unconfigured rather than failing.
app = celery_app("verifleet-flower", os.environ.get("VERIFLEET_REDIS_URL") or None)
