"""The Celery application (``celery -A verifleet.workers.app worker``).

Settings (docs/fleet.md, "Settings"): late acks, prefetch 1, reject on worker loss,
no result backend (results go to the store under their own keys), task events off
until Flower turns them on (they cost worker CPU per unit; Flower asks every worker
to send them every 5 s while it runs), and a visibility timeout longer than the
longest unit so Redis never redelivers a task that is still running.
"""

from __future__ import annotations

from celery import Celery

from verifleet.store import DEFAULT_QUEUE, celery_app

from ._settings import WorkerSettings

__all__ = ["app", "make_app"]


def make_app(settings: WorkerSettings | None = None) -> Celery:
    """Build a configured Celery app (one per process; :func:`~verifleet.store.celery_app`
    with the workers' settings).

    Raises:
        ConfigError: a malformed Redis URL or TLS option, or a bad ``VERIFLEET_*`` setting.
    """
    settings = settings or WorkerSettings.from_env()
    app = celery_app(
        "verifleet",
        settings.redis_url,
        include=["verifleet.workers.tasks", "verifleet.workers.reward_tasks"],
        task_acks_late=True,
        worker_prefetch_multiplier=1,
        task_reject_on_worker_lost=True,
        task_ignore_result=True,
        result_backend=None,
        task_default_queue=DEFAULT_QUEUE,
        task_serializer="json",
        accept_content=["json"],
        broker_transport_options={
            "visibility_timeout": settings.visibility_timeout,
            "unacked_restore_interval": settings.restore_interval,
            "unacked_restore_throttle": 1,
        },
        worker_send_task_events=False,
        task_send_sent_event=True,
        worker_hijack_root_logger=False,
        worker_pool="threads",
        worker_concurrency=32,
    )
    app.conf.verifleet_settings = settings
    return app


app = make_app()
