"""``ResultStore.begin_unit``: what a worker checks and records as it takes a unit
up (job status, unit done already, mark started), in one round trip, against a
real redis-server."""

from __future__ import annotations

import redis
from _support.factories import make_result

from verifleet.store import JobStatus, ResultStore


def _store(url: str) -> ResultStore:
    return ResultStore(redis.Redis.from_url(url), prefix="vfbegin")


def test_begin_unit_reports_the_job_and_marks_a_fresh_unit_started(redis_url: str) -> None:
    store = _store(redis_url)
    assert store.begin_unit("nope", "u1") == (None, False)  # no such job
    store.create_job("j1", benchmark_json="{}", config_json="{}", total_units=2)
    assert store.begin_unit("j1", "u1") == (JobStatus.RUNNING, False)  # queued -> running
    assert store.status("j1") == JobStatus.RUNNING
    assert store.progress("j1").in_flight == 1
    finished = store.write_unit("j1", "u1", [make_result("q1", verified=True)], ["k1"])
    assert finished is False
    assert store.begin_unit("j1", "u1") == (JobStatus.RUNNING, True)  # a redelivery: done
    assert store.progress("j1").in_flight == 0  # ... and not marked started again
    assert store.begin_unit("j1", "u2") == (JobStatus.RUNNING, False)
    assert store.write_unit("j1", "u2", [make_result("q2", verified=False)], ["k2"]) is True
    assert store.status("j1") == JobStatus.DONE


def test_begin_unit_of_a_cancelled_job_marks_nothing(redis_url: str) -> None:
    store = _store(redis_url)
    store.create_job("j2", benchmark_json="{}", config_json="{}", total_units=1)
    store.set_status("j2", JobStatus.CANCELLED)
    assert store.begin_unit("j2", "u1") == (JobStatus.CANCELLED, False)
    assert store.progress("j2").in_flight == 0
