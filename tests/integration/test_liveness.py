"""Dead worker detection on a real Redis: who holds which task, whose heartbeat
has expired, and that only one process at a time takes the reaper's turn."""

from __future__ import annotations

import time

import redis

from verifleet.orchestrator.store import Liveness, ResultStore


def test_holders_and_heartbeats(redis_url: str) -> None:
    liveness = Liveness(ResultStore(redis.Redis.from_url(redis_url), prefix="vftest"), ttl=1.0)
    task = {"args": ["j", 0, 0, 1], "kwargs": {"question_id": "q0"}}
    liveness.hold("t-dead", "dead-proc", task)
    liveness.hold("t-alive", "live-proc", task)
    liveness.hold("t-done", "dead-proc", task)
    liveness.release("t-done")
    liveness.beat("live-proc")

    holders = liveness.holders(["t-dead", "t-alive", "t-done", "t-unknown"])
    assert holders == {"t-dead": "dead-proc", "t-alive": "live-proc"}
    assert liveness.alive(list(holders.values())) == {"live-proc"}
    time.sleep(1.2)  # the live holder's heartbeat (ttl 1 s) expires
    assert liveness.alive(["live-proc", "dead-proc"]) == set()


def test_reaper_turn_is_exclusive(redis_url: str) -> None:
    liveness = Liveness(ResultStore(redis.Redis.from_url(redis_url), prefix="vftest"))
    assert liveness.take_reaper_turn(every=5) is True
    assert liveness.take_reaper_turn(every=5) is False
