"""The stall detector on a real Redis: a job whose messages are gone gets its
missing units sent again, and nothing else does.

A message lost between kombu's ``BRPOP`` and its unacked record cannot be produced
on demand (the window is a round trip), so these tests lose it the one way that
leaves the same trace: they take it off the queue themselves."""

from __future__ import annotations

import base64
import json

import pytest
import redis
from _support.fleet import Fleet
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator._fleet.job import Job
from verifleet.schemas import ModelConfig, VerificationConfig
from verifleet.store import DEFAULT_QUEUE, JobStatus, Liveness, QueueFeeder, ResultStore
from verifleet.workers._jobs import JobCache
from verifleet.workers._settings import WorkerSettings
from verifleet.workers._stalls import StallDetector
from verifleet.workers.app import make_app

pytestmark = pytest.mark.integration

_UNACKED = "unacked"  # kombu's default name for the hash of unacked messages


def _config(base_url: str = "http://127.0.0.1:9/v1") -> VerificationConfig:
    return VerificationConfig.build(
        answering_models=[ModelConfig.parse(f"{base_url}#answerer")],
        parsing_models=[ModelConfig.parse(f"{base_url}#judge")],
    )


def _detector(redis_url: str, settle: float = 30.0) -> StallDetector:
    store = ResultStore.from_url(redis_url, prefix="vf")
    app = make_app(WorkerSettings(redis_url=redis_url))
    return StallDetector(store, JobCache(store), app, settle=settle, max_resends=2)


def _submit(bench: object, config: VerificationConfig, redis_url: str) -> Job:
    """Submit, then do what a worker's feeder does next: send the job's units
    (a submitted job is only enrolled in its queue's schedule)."""
    job = Job.submit(bench, config, redis_url)  # type: ignore[arg-type]
    app = make_app(WorkerSettings(redis_url=redis_url))
    feeder = QueueFeeder(job.store.client, app, DEFAULT_QUEUE, JobCache(job.store).get)
    feeder.feed()
    return job


def _body(message: bytes) -> bytes:
    return base64.b64decode(json.loads(message)["body"])


def _drain(client: redis.Redis) -> list[bytes]:
    return [m for m in iter(lambda: client.rpop(DEFAULT_QUEUE), None) if isinstance(m, bytes)]


def test_nothing_is_suspected_while_the_queue_has_messages(redis_url: str) -> None:
    bench, _ = capitals_benchmark(3)
    job = _submit(bench, _config(), redis_url)
    detector = _detector(redis_url)
    assert detector.check(_UNACKED, now=0.0) == {}
    assert detector.check(_UNACKED, now=100.0) == {}
    assert job.store.client.llen(DEFAULT_QUEUE) == 3  # nothing sent twice


def test_a_job_without_messages_is_resent_after_settling(redis_url: str) -> None:
    bench, _ = capitals_benchmark(3)
    job = _submit(bench, _config(), redis_url)
    client = job.store.client
    assert len(_drain(client)) == 3  # every message lost
    detector = _detector(redis_url, settle=30.0)

    assert detector.check(_UNACKED, now=1000.0) == {}  # first sighting: suspect only
    assert detector.check(_UNACKED, now=1010.0) == {}  # not settled yet
    assert detector.check(_UNACKED, now=1031.0) == {job.job_id: 3}
    resent = _drain(client)
    assert len(resent) == 3
    # The messages are the job's own units, by task name and position.
    bodies = {tuple(json.loads(_body(m))[0]) for m in resent}
    assert bodies == {(job.job_id, qi, 0, 1) for qi in range(3)}

    # No progress after two resends in a row: the job is left to `verifleet resume`.
    assert detector.check(_UNACKED, now=1062.0) == {job.job_id: 3}
    _drain(client)
    assert detector.check(_UNACKED, now=1093.0) == {}
    assert detector.check(_UNACKED, now=2000.0) == {}


def test_a_job_still_giving_out_units_is_not_suspected(redis_url: str) -> None:
    bench, _ = capitals_benchmark(3)
    job = Job.submit(bench, _config(), redis_url)  # enrolled, nothing sent yet
    detector = _detector(redis_url, settle=1.0)
    assert detector.check(_UNACKED, now=0.0) == {}
    assert detector.check(_UNACKED, now=50.0) == {}
    assert job.store.client.llen(DEFAULT_QUEUE) == 0
    assert job.store.schedule.scheduled(DEFAULT_QUEUE) == {job.job_id}


def test_a_dead_process_hold_carries_nothing(redis_url: str) -> None:
    """A worker killed between finishing a task and writing its release leaves
    its hold behind; the same kill lost a message of the job (popped, never
    recorded as unacked). Only a live process's hold keeps the job carried."""
    bench, _ = capitals_benchmark(2)
    dead_job = _submit(bench, _config(), redis_url)
    live_job = _submit(bench, _config(), redis_url)
    store = dead_job.store
    liveness = Liveness(store)
    _drain(store.client)  # every message lost
    liveness.beat("live-owner")  # "dead-owner" never beats (or its beat expired)
    holds = {
        "task-dead": liveness.hold_record("dead-owner", {"args": [dead_job.job_id, 0, 0, 1]}),
        "task-live": liveness.hold_record("live-owner", {"args": [live_job.job_id, 0, 0, 1]}),
    }
    liveness.apply(holds, [])
    detector = _detector(redis_url, settle=1.0)
    assert detector.check(_UNACKED, now=0.0) == {}
    assert detector.check(_UNACKED, now=5.0) == {dead_job.job_id: 2}
    # The dead process's hold is gone, the live one's kept.
    assert liveness.holders(["task-dead", "task-live"]) == {"task-live": "live-owner"}


def test_carried_done_and_cancelled_jobs_are_not_resent(redis_url: str) -> None:
    bench, _ = capitals_benchmark(2)
    carried = _submit(bench, _config(), redis_url)
    cancelled = _submit(bench, _config(), redis_url)
    client = carried.store.client
    messages = _drain(client)
    # One of the first job's messages is taken by a worker (kombu's unacked hash).
    mine = next(m for m in messages if json.loads(_body(m))[0][0] == carried.job_id)
    client.hset(_UNACKED, "tag-1", json.dumps([json.loads(mine), "", DEFAULT_QUEUE]))
    cancelled.cancel()
    detector = _detector(redis_url, settle=1.0)
    detector.check(_UNACKED, now=0.0)
    assert detector.check(_UNACKED, now=5.0) == {}
    assert cancelled.progress().status == JobStatus.CANCELLED


def test_a_worker_sends_lost_units_again_on_its_own(fleet: Fleet, redis_url: str) -> None:
    bench, answers = capitals_benchmark(6)
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        job = _submit(bench, _config(ep.base_url), redis_url)
        client = job.store.client
        lost = client.rpop(DEFAULT_QUEUE, 2)  # two messages vanish before any worker runs
        assert isinstance(lost, list) and len(lost) == 2
        fleet.start_worker("w1", concurrency=4, VERIFLEET_STALL_SETTLE="2")
        fleet.wait_ready(["w1"])
        progress = job.wait(timeout=90)
    assert progress.status == JobStatus.DONE
    assert progress.done_units == 6 and progress.results == 6
    assert "stalled: 2 unit(s) without results" in fleet.log("w1")
