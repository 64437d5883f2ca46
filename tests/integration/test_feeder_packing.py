"""How many units a feeder puts in one message, from what it measures on a real
redis-server: the fleet's rate and the units running (``QueueFeeder``)."""

from __future__ import annotations

import pytest
import redis

from verifleet.store import JobKeys, QueueFeeder
from verifleet.workers._settings import WorkerSettings
from verifleet.workers.app import make_app

pytestmark = pytest.mark.integration

PREFIX = "vfpack"


def _feeder(redis_url: str, **kw: int) -> QueueFeeder:
    client = redis.Redis.from_url(redis_url)
    app = make_app(WorkerSettings(redis_url=redis_url))
    return QueueFeeder(client, app, "packq", lambda job: None, prefix=PREFIX, **kw)  # type: ignore[arg-type,return-value]


def _running(client: redis.Redis, job_id: str, n: int) -> None:
    key = JobKeys(job_id, prefix=PREFIX).inflight
    client.delete(key)
    if n:
        client.zadd(key, {f"u{i}": 1.0 for i in range(n)})


def test_a_message_holds_about_two_seconds_of_a_threads_work(redis_url: str) -> None:
    feeder = _feeder(redis_url)
    client = feeder.client
    far = 10**6  # units left after the fill: the job is nowhere near its end
    try:
        assert feeder._largest_messages({"a": far}) == {"a": 1}  # no rate measured yet
        # 500 units/s with 64 running: a unit takes 0.128 s; 2 s hold 15 of them.
        feeder.rate = 500.0
        _running(client, "a", 40)
        _running(client, "b", 24)
        assert feeder._largest_messages({"a": far, "b": far}) == {"a": 15, "b": 15}
        # Bound by an endpoint's window: 256 units running at 64/s take 4 s each.
        feeder.rate = 64.0
        _running(client, "a", 256)
        assert feeder._largest_messages({"a": far}) == {"a": 1}
        # Very short units: the configured most.
        feeder.rate = 5000.0
        _running(client, "a", 10)
        assert feeder._largest_messages({"a": far}) == {"a": 16}
        # Near its end (80 left, 10 running) a job's messages hold 80 / 10 = 8.
        assert feeder._largest_messages({"a": 80}) == {"a": 8}
        assert feeder._largest_messages({"a": 19}) == {"a": 1}
        assert _feeder(redis_url, max_per_message=1)._largest_messages({"a": far}) == {"a": 1}
        # Spread 1 packs in full, whatever was measured (tests use it).
        packed = _feeder(redis_url, spread=1, max_per_message=4)._largest_messages({"a": 3})
        assert packed == {"a": 4}
    finally:
        for job in ("a", "b"):
            client.delete(JobKeys(job, prefix=PREFIX).inflight)
