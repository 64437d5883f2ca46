"""Dead worker detection on a real Redis: tasks whose holder's heartbeat expired
are found and claimed exactly once; tasks of live holders are left alone."""

from __future__ import annotations

import time

import redis

from verifleet.orchestrator.store import Liveness, ResultStore


def test_orphans_of_dead_holders_are_claimed_once(redis_url: str) -> None:
    liveness = Liveness(ResultStore(redis.Redis.from_url(redis_url), prefix="vftest"), ttl=1.0)
    task = {"args": ["j", 0, 0, 1], "kwargs": {"question_id": "q0"}}
    liveness.hold("t-dead", "dead-proc", task)
    liveness.hold("t-alive", "live-proc", task)
    liveness.hold("t-done", "dead-proc", task)
    liveness.release("t-done")
    liveness.beat("live-proc")

    assert list(liveness.orphans(grace=30)) == [], "nothing is older than the grace period"
    orphans = list(liveness.orphans(grace=0))
    assert [(o.task_id, o.owner) for o in orphans] == [("t-dead", "dead-proc")]
    assert orphans[0].task == task
    assert liveness.claim(orphans[0]) is True
    assert liveness.claim(orphans[0]) is False, "a second reaper must not re-send it"
    assert list(liveness.orphans(grace=0)) == []

    time.sleep(1.2)  # the live holder's heartbeat (ttl 1 s) expires
    assert [o.task_id for o in liveness.orphans(grace=0)] == ["t-alive"]


def test_reaper_turn_is_exclusive(redis_url: str) -> None:
    liveness = Liveness(ResultStore(redis.Redis.from_url(redis_url), prefix="vftest"))
    assert liveness.take_reaper_turn(every=5) is True
    assert liveness.take_reaper_turn(every=5) is False
