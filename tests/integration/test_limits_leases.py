"""Window slots leased to worker processes in batches (``limits/_pool.py``):
each ``RedisCallGate`` below, with its own Redis connection, is what one worker
process holds. Leased slots count as taken fleet-wide, move to a process that
waits for them, and come back when their holder dies. Nothing here asserts a
duration: the sleeps only let a lease or a renewal interval pass.
"""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
import redis

from verifleet.limits import NoCapacityError, RedisCallGate, endpoint_id
from verifleet.schemas import ModelConfig

pytestmark = pytest.mark.integration

PREFIX = "vflease"


def _gate(redis_url: str, *, max_wait: float, lease_seconds: float = 30) -> RedisCallGate:
    client = redis.Redis.from_url(redis_url)
    return RedisCallGate(client, lease_seconds=lease_seconds, max_wait=max_wait, prefix=PREFIX)


def _admits(gate: RedisCallGate, model: ModelConfig) -> bool:
    try:
        with gate(model):
            return True
    except NoCapacityError:
        return False


def test_a_dead_process_keeps_its_slots_until_its_lease_ends(redis_url: str) -> None:
    model = ModelConfig.parse("http://127.0.0.1:9/v1#dead", max_concurrency=3)
    dying = _gate(redis_url, max_wait=0.2, lease_seconds=1.0)
    other = _gate(redis_url, max_wait=0.2)
    held = contextlib.ExitStack()
    for _ in range(3):  # entered and never left: the process is killed mid-call
        held.enter_context(dying(model))
    assert other.in_flight(model) == 3
    assert not _admits(other, model)  # leased slots count as taken ...
    time.sleep(1.2)  # ... until the lease, never renewed, ends
    with contextlib.ExitStack() as stack:
        for _ in range(3):
            stack.enter_context(other(model))
        assert other.in_flight(model) == 3  # the dead lease is gone, not added to
    held.pop_all()  # never exited: a killed process gives nothing back


def test_slots_a_busy_process_holds_move_to_a_process_waiting_for_them(redis_url: str) -> None:
    model = ModelConfig.parse("http://127.0.0.1:9/v1#share", max_concurrency=4)
    busy = _gate(redis_url, max_wait=1.0)
    waiting = _gate(redis_url, max_wait=10.0)
    calls = [busy(model) for _ in range(4)]
    for call in calls:
        call.__enter__()
    got: list[int] = []

    def wait_for_a_slot() -> None:
        with waiting(model):
            got.append(busy.in_flight(model))

    thread = threading.Thread(target=wait_for_a_slot)
    thread.start()
    # It asks, finds the window full, and waits, recorded as starving ...
    client = redis.Redis.from_url(redis_url)
    starving = f"{PREFIX}:limit:{endpoint_id(model)}:starving"
    for _ in range(200):
        if client.zcard(starving):
            break
        time.sleep(0.05)
    assert client.zcard(starving) == 1 and not got
    time.sleep(0.3)  # past the busy process's renewal interval (0.25 s)
    # ... until the busy process renews its lease as one of its calls ends: it
    # keeps its share (2 of 4) of what it holds and gives the rest back.
    calls[0].__exit__(None, None, None)
    thread.join(timeout=10)
    assert got and got[0] <= 4  # the cap held while the slot moved
    for call in calls[1:]:
        call.__exit__(None, None, None)
    assert _admits(waiting, model) and _admits(busy, model)
    assert busy.in_flight(model) == 0  # idle processes hold nothing
