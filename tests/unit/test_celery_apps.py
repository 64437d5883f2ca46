"""Every Celery app of verifleet comes from one factory (``store/_celery.py``) and
keeps its role's settings: the workers', the task senders' (submit and ``reward
--redis``, through one :class:`~verifleet.store.Broker`) and Flower's."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from verifleet.store import Broker
from verifleet.workers._settings import WorkerSettings
from verifleet.workers.app import make_app

URL = "redis://:pw@127.0.0.1:6379/0"

# The settings each role had before the apps shared a factory.
_COMMON = {"broker_url": URL, "broker_connection_retry_on_startup": True}
_SENDER = {
    **_COMMON,
    "task_serializer": "json",
    "accept_content": ["json"],
    "task_ignore_result": True,
    "task_send_sent_event": False,
}


def _settings(conf: Any, names: list[str]) -> dict[str, Any]:
    return {name: conf[name] for name in names}


def test_the_task_senders_send_json_without_results_or_sent_events() -> None:
    """Submit, resume, reverify and ``reward --redis`` send through one client."""
    broker = Broker(URL)
    try:
        assert broker.app.main == "verifleet-client"
        assert _settings(broker.app.conf, list(_SENDER)) == _SENDER
    finally:
        broker.close()


def test_the_workers_app_keeps_its_settings() -> None:
    settings = WorkerSettings(redis_url=URL)
    app = make_app(settings)
    expected = {
        **_COMMON,
        "task_acks_late": True,
        "worker_prefetch_multiplier": 1,
        "task_reject_on_worker_lost": True,
        "task_ignore_result": True,
        "result_backend": None,
        "task_serializer": "json",
        "accept_content": ["json"],
        "worker_send_task_events": False,
        "task_send_sent_event": True,
        "worker_hijack_root_logger": False,
        "worker_pool": "threads",
        "worker_concurrency": 32,
    }
    assert app.main == "verifleet"
    assert _settings(app.conf, list(expected)) == expected
    assert app.conf.task_default_queue == "verifleet"
    assert app.conf.broker_transport_options == {
        "visibility_timeout": settings.visibility_timeout,
        "unacked_restore_interval": settings.restore_interval,
        "unacked_restore_throttle": 1,
    }
    assert set(app.conf.include) == {"verifleet.workers.tasks", "verifleet.workers.reward_tasks"}
    assert app.conf.verifleet_settings is settings


def test_flowers_app_reads_the_broker_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import verifleet.orchestrator._fleet.flower_app as flower_app

    monkeypatch.setenv("VERIFLEET_REDIS_URL", URL)
    app = importlib.reload(flower_app).app
    assert app.main == "verifleet-flower"
    assert _settings(app.conf, list(_COMMON)) == _COMMON
    # Flower sends no tasks: none of the senders' settings are set for it.
    assert app.conf.task_serializer == "json" and app.conf.task_ignore_result is False

    monkeypatch.delenv("VERIFLEET_REDIS_URL")
    unconfigured = importlib.reload(flower_app).app
    assert unconfigured.conf.broker_url is None
