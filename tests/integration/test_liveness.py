"""Dead worker detection on a real Redis: who holds which task, whose heartbeat
has expired, and that only one process at a time takes the reaper's turn."""

from __future__ import annotations

import time

import pytest
import redis
from _support.redis_server import free_port

from verifleet.store import Liveness, ResultStore


def test_holders_and_heartbeats(redis_url: str) -> None:
    liveness = Liveness(ResultStore(redis.Redis.from_url(redis_url), prefix="vftest"), ttl=1.0)
    task = {"args": ["j", 0, 0, 1], "kwargs": {"question_id": "q0"}}
    liveness.apply(
        {
            "t-dead": Liveness.hold_record("dead-proc", task),
            "t-alive": Liveness.hold_record("live-proc", task),
            "t-done": Liveness.hold_record("dead-proc", task),
        },
        [],
    )
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


def test_reconcile_releases_holds_the_consumer_forgot(redis_url: str) -> None:
    """After a lost broker connection Celery drops its prefetched requests without
    any signal; their holds must go so that the reaper can return the messages."""
    from celery import Celery

    from verifleet.workers._reaper import LivenessThread

    liveness = Liveness(ResultStore(redis.Redis.from_url(redis_url), prefix="vftest"))
    thread = LivenessThread(liveness, "me", Celery("t"), interval=0.2)
    task = {"args": ["j", 0, 0, 1], "kwargs": {}}
    thread.hold("running", task)
    thread.hold("dropped", task)
    thread.flush()
    time.sleep(0.3)  # older than one beat
    thread.hold("fresh", task)  # just received: Celery may not have reserved it yet
    thread.flush()

    released = thread.reconcile(known=lambda: {"running"})

    assert released == ["dropped"]
    assert liveness.holders(["running", "dropped", "fresh"]) == {"running": "me", "fresh": "me"}
    assert thread.reconcile(known=lambda: {"running"}) == []  # released once only
    liveness.release("running")
    liveness.release("fresh")


def test_holds_and_releases_are_written_together_and_survive_a_failed_write(
    redis_url: str,
) -> None:
    """A worker writes what it received and finished in one round trip per flush;
    a task that ends before the write costs nothing, and a write that fails (Redis
    away) loses nothing."""
    from celery import Celery

    from verifleet.workers._reaper import LivenessThread

    liveness = Liveness(ResultStore(redis.Redis.from_url(redis_url), prefix="vftest"))
    unreachable = Liveness(
        ResultStore(redis.Redis(port=free_port(), socket_connect_timeout=0.5), prefix="vftest")
    )
    thread = LivenessThread(unreachable, "me", Celery("t"))
    task = {"args": ["j", 0, 0, 1], "kwargs": {}}
    thread.hold("kept", task)
    thread.hold("ended", task)
    with pytest.raises(redis.ConnectionError):
        thread.flush()
    thread.release("ended")  # ended while Redis was away: never written at all
    thread.hold("brief", task)
    thread.release("brief")
    thread.liveness = liveness
    assert liveness.holders(["kept", "ended", "brief"]) == {}  # nothing written yet
    thread.flush()
    assert liveness.holders(["kept", "ended", "brief"]) == {"kept": "me"}
    thread.release("kept")
    thread.flush()
    assert liveness.holders(["kept"]) == {}


def test_the_heartbeat_goes_with_the_holds_in_one_round_trip(redis_url: str) -> None:
    """Liveness is one write per interval: the heartbeat rides with the holds
    and releases of that flush (and alone when there are none)."""
    from celery import Celery

    from verifleet.workers._reaper import LivenessThread

    liveness = Liveness(ResultStore(redis.Redis.from_url(redis_url), prefix="vfbeat"))
    thread = LivenessThread(liveness, "beater", Celery("t"))
    thread.hold("t1", {"args": ["j", 0, 0, 1], "kwargs": {}})
    thread.flush()
    assert liveness.alive(["beater"]) == set()  # holds alone: no heartbeat
    thread.flush(beat=True)
    assert liveness.alive(["beater"]) == {"beater"}  # nothing else to write: the beat alone
    thread.release("t1")
    liveness.forget("beater")
    thread.flush(beat=True)
    assert liveness.alive(["beater"]) == {"beater"}
    assert liveness.holders(["t1"]) == {}


def test_the_reaper_gives_back_endpoint_slots_of_processes_without_a_heartbeat(
    redis_url: str,
) -> None:
    """A worker killed outright leaves its endpoint slots (calls in flight, slots
    kept for its next calls) in the fleet's window; the reaper's turn frees them
    once its heartbeat is gone, and never touches a live process's slots."""
    from celery import Celery

    from verifleet.limits import RedisCallGate
    from verifleet.schemas import ModelConfig
    from verifleet.workers._reaper import LivenessThread

    client = redis.Redis.from_url(redis_url)
    liveness = Liveness(ResultStore(client, prefix="vfslots"))
    model = ModelConfig.parse("http://127.0.0.1:9/v1#slots", max_concurrency=2)

    def gate(owner: str) -> RedisCallGate:
        return RedisCallGate(
            redis.Redis.from_url(redis_url),
            lease_seconds=600,
            max_wait=0.2,
            prefix="vfslots",
            keep_idle=600,
            owner=owner,
        )

    killed, living = gate("host:1:killed"), gate("host:2:living")
    with killed(model):
        pass  # its slot stays kept; the process is then "killed" with it
    liveness.beat("host:2:living")
    reaper = LivenessThread(liveness, "host:2:living", Celery("t"))
    with living(model):
        assert reaper.reclaim_slots() == 1
        assert reaper.reclaim_slots() == 0  # the living one's call keeps its slot
        newcomer = gate("host:3:newcomer")
        with newcomer(model):
            pass  # the slot the killed process held is free again
    living.close()
    newcomer.close()
