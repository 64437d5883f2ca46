"""How many units a feeder puts in one message, from what it measures on a real
redis-server: the fleet's rate and the units running (``QueueFeeder``)."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from verifleet.store import JobKeys, QueueFeeder
from verifleet.workers._settings import WorkerSettings
from verifleet.workers.app import make_app

pytestmark = pytest.mark.integration

PREFIX = "vfpack"


def _feeder(redis_url: str, **kw: Any) -> QueueFeeder:
    kw.setdefault("message_seconds", 2.0)  # the figures below are for 2 s
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
    far = 10**6  # units left: the job is nowhere near its end
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


def test_busy_threads_are_the_messages_workers_hold_not_the_units_taken_up(
    redis_url: str,
) -> None:
    """A thread takes several of its message's units up at a time (a step), so
    the units in flight overcount the busy threads by up to the step; with the
    broker's unacked hash the feeder counts the messages held instead."""
    busy = f"{PREFIX}:unacked"
    feeder = _feeder(redis_url, busy_key=busy)
    client = feeder.client
    far = 10**6
    try:
        # 64 threads, each with a step of 4 units taken up: 256 in flight.
        _running(client, "a", 256)
        client.hset(busy, mapping={f"tag{i}": "m" for i in range(64)})
        feeder.rate = 500.0  # a unit takes 64 / 500 = 0.128 s: 2 s hold 15
        assert feeder._largest_messages({"a": far}) == {"a": 15}
        # The same fleet counted by its units in flight: a quarter of that.
        by_units = _feeder(redis_url)
        by_units.rate = 500.0
        assert by_units._largest_messages({"a": far}) == {"a": 3}
        # Near the job's end what is left is split between its 64 threads.
        assert feeder._largest_messages({"a": 640}) == {"a": 10}
        # Two jobs share the threads in proportion to their units in flight.
        _running(client, "b", 256)
        assert feeder._largest_messages({"a": 640, "b": 640}) == {"a": 15, "b": 15}
        assert feeder._largest_messages({"a": 320, "b": 64}) == {"a": 10, "b": 2}
        # Fewer units in flight than messages held: never more threads than units.
        client.delete(JobKeys("b", prefix=PREFIX).inflight)
        _running(client, "a", 32)
        assert feeder._largest_messages({"a": 320}) == {"a": 10}
    finally:
        client.delete(busy, *(JobKeys(j, prefix=PREFIX).inflight for j in "ab"))


def test_a_feeder_looks_less_often_while_its_queue_is_deep(redis_url: str) -> None:
    """Each look is a round trip per queue and process; while the queue holds
    more than a fill waits for, looking sends nothing, so the feeder thread
    waits half the time the queue takes to drain that far (within bounds)."""
    from verifleet.workers._feeder import FeederThread

    feeder = _feeder(redis_url)
    client = feeder.client
    queue_keys = [feeder.queue, feeder._given, feeder._per_message]
    thread = FeederThread([feeder], interval=0.2, max_interval=1.0)
    try:
        feeder.rate = 100.0  # units/s: the depth is 200 units, a fill below 100
        client.rpush(feeder.queue, *[b"m"] * 40)  # 40 messages of 8 units: 320
        client.set(feeder._per_message, "8")
        client.set(feeder._given, 10_000)
        feeder._last = None  # the rate as set, not re-measured by this look
        assert feeder.feed() == 0  # deep enough: nothing sent
        assert feeder.calm_for == pytest.approx((320 - 100) / 100)
        assert thread.next_wait() == pytest.approx(1.0)  # 1.1 s, capped at the most
        client.ltrim(feeder.queue, 0, 14)  # 15 messages: 120 units, 0.2 s of calm
        assert feeder.feed() == 0
        assert thread.next_wait() == pytest.approx(0.2)
        feeder.rate = 0.0  # idle: a new job must be seen at once
        feeder.feed()
        assert feeder.calm_for == 0.0 and thread.next_wait() == pytest.approx(0.2)
    finally:
        client.delete(*queue_keys)


def test_a_measured_unit_time_sizes_messages_before_the_rate_settles(redis_url: str) -> None:
    """While a job starts, the fleet's rate is still climbing and Little's law
    makes units look long (messages of one); the time a unit took where it ran
    (the worker's ``UnitTimes``) sizes them right away."""
    from verifleet.workers._unit_times import UnitTimes

    times = UnitTimes()
    busy = f"{PREFIX}:unacked"
    feeder = _feeder(redis_url, busy_key=busy, unit_seconds=times.get)
    client = feeder.client
    far = 10**6
    try:
        _running(client, "a", 64)
        client.hset(busy, mapping={f"tag{i}": "m" for i in range(64)})
        feeder.rate = 40.0  # still climbing: 64 / 40 = 1.6 s a unit, by the rate
        assert feeder._largest_messages({"a": far}) == {"a": 1}
        times.record("a", 0.25)  # measured: 2 s hold 8
        assert feeder._largest_messages({"a": far}) == {"a": 8}
        feeder.rate = 0.0  # nothing measured by the rate at all
        assert feeder._largest_messages({"a": far}) == {"a": 8}
        # Smoothed: one slow unit moves the mean a fifth of the way.
        times.record("a", 1.25)
        assert times.get("a") == pytest.approx(0.45)
        assert feeder._largest_messages({"a": far}) == {"a": 4}
        # Still at most the configured most, and split near the job's end.
        times.record("c", 0.01)
        _running(client, "a", 0)
        _running(client, "c", 64)
        assert feeder._largest_messages({"c": far}) == {"c": 16}
        assert feeder._largest_messages({"c": 320}) == {"c": 5}
        _running(client, "c", 0)
        _running(client, "a", 64)
        # Units waiting for an endpoint's slots take long: one per message.
        for _ in range(40):
            times.record("a", 3.0)
        assert feeder._largest_messages({"a": far}) == {"a": 1}
        # Another job of the same fill, not measured yet, goes by the rate.
        feeder.rate = 500.0  # 64 busy: 0.128 s a unit, 2 s hold 15
        assert feeder._largest_messages({"a": far, "b": far})["b"] == 15
    finally:
        client.delete(busy, *(JobKeys(j, prefix=PREFIX).inflight for j in "abc"))
