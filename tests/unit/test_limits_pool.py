"""When a worker process keeps a finished call's endpoint slot, and when it
gives it back (``verifleet.limits._pool``), without Redis: the pool only
decides; the gate sends what it returns."""

from __future__ import annotations

from verifleet.limits import EndpointLimits
from verifleet.limits._pool import Ended, Permit, SlotPool

LIMITS = EndpointLimits("e", max_concurrency=8, requests_per_minute=None)


def _pool(share: int) -> SlotPool:
    pool = SlotPool(LIMITS, keep=True)
    pool.heard(now=0.0, paused_ms=0, share=share)
    return pool


def _call(pool: SlotPool, name: str, *, now: float = 1.0, give_back: bool = False) -> object:
    """A call that took a fresh slot ``name`` and ended at ``now``."""
    permit = Permit(name, reuse_until=100.0)
    with pool.cond:
        pool.taken()
        ended = Ended(name, 0, 5.0, -1, 0, -1, pool.busy)
        return pool.end(permit, ended, now=now, give_back=give_back)


def test_a_slot_within_the_share_is_kept_and_serves_the_next_call() -> None:
    pool = _pool(share=2)
    assert _call(pool, "a") is None  # kept: nothing to send
    with pool.cond:
        permit = pool.reuse(1.5)
    assert permit is not None and permit.member == "a" and not permit.fresh
    assert pool.busy == 1 and pool.idle == []


def test_slots_beyond_the_share_go_back_as_their_calls_end() -> None:
    pool = _pool(share=1)
    with pool.cond:
        first, second = Permit("a", 100.0), Permit("b", 100.0)
        pool.taken()
        pool.taken()
        assert pool.end(first, Ended("a", 0, 5.0, -1, 0, -1, 2), now=1.0, give_back=False)
        assert pool.end(second, Ended("b", 0, 5.0, -1, 0, -1, 1), now=1.0, give_back=False) is None
    assert [p.member for p in pool.idle] == ["b"]


def test_nothing_is_kept_without_a_share_while_paused_or_after_a_429() -> None:
    sync = _call(_pool(share=0), "a")
    assert sync is not None and sync.releases == ["a"]  # type: ignore[attr-defined]
    paused = _pool(share=4)
    paused.heard(now=0.0, paused_ms=5000, share=4)
    assert _call(paused, "b", now=1.0) is not None
    assert _call(_pool(share=4), "c", give_back=True) is not None


def test_a_smaller_share_sends_back_kept_slots_and_reports_ended_calls() -> None:
    pool = _pool(share=3)
    for name in ("a", "b", "c"):
        assert _call(pool, name) is None
    pool.heard(now=2.0, paused_ms=0, share=1)
    with pool.cond:
        sync = pool.take(2.0, idle_for=10.0)
    assert sorted(sync.releases) == ["a", "b"]  # down to the share
    assert [e.member for e in sync.ended] == ["a", "b", "c"]  # in the order they ended
    assert sync.held == 3  # counted before the release
    with pool.cond:
        assert pool.take(2.0, idle_for=10.0).releases == []
        assert pool.take(12.0, idle_for=10.0).releases == ["c"]  # idle too long
