"""The one place a Celery app is configured: the workers' app, the clients that send
tasks (``submit``, ``resume``, ``reverify``, ``verifleet reward --redis``) and the
app Flower runs with.

Every app gets its broker from :class:`~verifleet.store.RedisTarget` (the URL and,
for ``rediss://``, the TLS options the store uses too) and retries the broker at
start-up; the rest is the role's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from celery import Celery

from ._redis_url import RedisTarget

__all__ = ["CLIENT_SETTINGS", "celery_app", "client_app"]

#: What a process that only sends tasks by name sets: JSON messages, no results.
#: No "task-sent" events: each doubled the publishes of a submit (a fan-out
#: message per task), and Flower learns of every task from the workers' own
#: received/started/succeeded events anyway.
CLIENT_SETTINGS: dict[str, Any] = {
    "task_serializer": "json",
    "accept_content": ["json"],
    "task_ignore_result": True,
    "task_send_sent_event": False,
}


def celery_app(
    name: str, redis_url: str | None, *, include: Sequence[str] = (), **settings: Any
) -> Celery:
    """A Celery app named ``name`` on the broker ``redis_url`` with the role's
    ``settings``; with no URL, an app left unconfigured (``celery -A`` may
    import a module whose app is configured only when it runs).

    Raises:
        ConfigError: a malformed URL or TLS option (see ``RedisTarget``).
    """
    app = Celery(name, include=list(include) or None)
    if redis_url is not None:
        app.conf.update(
            **RedisTarget.parse(redis_url).celery_settings(),
            broker_connection_retry_on_startup=True,
            **settings,
        )
    return app


def client_app(name: str, redis_url: str) -> Celery:
    """An app that sends tasks by name (:data:`CLIENT_SETTINGS`).

    Raises:
        ConfigError: a malformed URL or TLS option (see ``RedisTarget``).
    """
    return celery_app(name, redis_url, **CLIENT_SETTINGS)
