"""Fair shares of the reward service's places between callers
(:class:`~verifleet.pipeline.FairShare`, the in-flight admission built on it, and
how a request's caller is identified), without a server. Through a real
``verifleet serve`` and a slow caller: tests/hostile/test_serve_fairness.py.

``linger=0`` (a caller stops counting as soon as it holds nothing) keeps the
counting deterministic where the linger is not what is tested; the linger test
counts an idle caller before and after its linger, with no assertion on time.
"""

from __future__ import annotations

import asyncio

import pytest

from verifleet.errors import ConfigError
from verifleet.pipeline import FairShare
from verifleet.reward.serve._access import CallerIdentity
from verifleet.reward.serve._admission import Admission
from verifleet.web import bearer_token_ok


def test_a_caller_alone_takes_every_place_and_a_second_caller_caps_it() -> None:
    places = FairShare(4, linger=0)
    assert all(places.try_take("a") for _ in range(4))  # alone: work-conserving
    assert not places.try_take("a") and places.used == 4
    # b arrives: the server is full and a holds 4, over its share of 2 while
    # b is active.
    assert places.share("b") == 2 and not places.fits("b")


def test_a_freed_place_goes_to_the_caller_under_its_share_not_the_hog() -> None:
    async def scenario() -> list[str]:
        places = FairShare(2, linger=0)
        assert places.try_take("a") and places.try_take("a")
        served: list[str] = []
        # a queues three more, then b one: FIFO would serve a's three first.
        turns = [(c, places.join(c)) for c in ("a", "a", "a", "b")]
        for caller, turn in turns:
            turn.add_done_callback(lambda _f, c=caller: served.append(c))
        places.give("a")  # a holds 1 (its share of 2 with b waiting): b's turn
        await asyncio.sleep(0)
        assert served == ["b"] and places.held("b") == 1 and places.held("a") == 1
        places.give("a")  # a's own place back: a may take it again
        await asyncio.sleep(0)
        assert served == ["b", "a"]
        places.give("b")  # b leaves with nothing waiting: a alone may take both
        await asyncio.sleep(0)
        assert served == ["b", "a", "a"] and places.held("a") == 2
        for caller, turn in turns[:3]:
            places.abandon(caller, turn)  # the handed ones give their places back
        assert places.used == 0 and places.queued == 0 and places.callers == 0
        return served

    asyncio.run(scenario())


def test_waiting_callers_are_served_round_robin() -> None:
    async def scenario() -> list[str]:
        places = FairShare(1, linger=0)
        assert places.try_take("hog")
        served: list[str] = []
        for caller in ("a", "a", "a", "b", "c"):
            places.join(caller).add_done_callback(lambda _f, c=caller: served.append(c))
        for _ in range(4):
            holder = "hog" if not served else served[-1]
            places.give(holder)
            await asyncio.sleep(0)
        return served

    assert asyncio.run(scenario()) == ["a", "b", "c", "a"]


def test_an_idle_caller_counts_while_it_lingers() -> None:
    async def scenario() -> None:
        places = FairShare(4, linger=0.05)
        assert places.try_take("victim")
        places.give("victim")  # between two of its requests
        assert places.callers == 1 and places.share("hog") == 2
        while places.callers:  # its linger runs out
            await asyncio.sleep(0.01)
        assert places.share("hog") == 4

    asyncio.run(scenario())


def test_a_waiter_held_back_by_its_share_is_handed_a_place_once_the_other_lingered() -> None:
    async def scenario() -> None:
        places = FairShare(2, linger=0.05)
        assert places.try_take("hog") and places.try_take("victim")
        places.give("victim")  # lingering: the hog's share stays 1
        turn = places.join("hog")
        await asyncio.sleep(0)
        assert not turn.done() and places.used == 1
        await asyncio.wait_for(turn, 5)  # handed once the victim stops counting
        assert places.held("hog") == 2

    asyncio.run(scenario())


def test_unfair_places_are_first_come_first_served() -> None:
    async def scenario() -> list[str]:
        places = FairShare(1, fair=False)
        assert places.try_take("a")
        served: list[str] = []
        for caller in ("a", "a", "b"):
            places.join(caller).add_done_callback(lambda _f, c=caller: served.append(c))
        for _ in range(3):
            places.give("any")
            await asyncio.sleep(0)
        return served

    assert asyncio.run(scenario()) == ["a", "a", "b"]


def test_admission_lets_a_caller_under_its_share_wait_and_refuses_one_over_it() -> None:
    async def scenario() -> None:
        admission = Admission(2, max_queued=0, queue_timeout=30)
        assert await admission.enter("hog") and await admission.enter("hog")
        assert not await admission.enter("hog")  # over its share, no queue: 503
        victim = asyncio.ensure_future(admission.enter("victim"))
        await asyncio.sleep(0)
        assert not victim.done() and admission.queued == 1  # waits despite max_queued=0
        assert not await admission.enter("hog")  # b active: hog's share is 1, it holds 2
        admission.leave(1, "hog")
        assert await victim
        assert admission.places.held("victim") == 1 and admission.rejected == 2
        # The batch path: a count over the caller's share is refused whole.
        assert not admission.try_enter(2, "other")
        readiness = admission.readiness()[1]
        assert readiness["inflight"] == 2 and readiness["callers"] == 2

    asyncio.run(scenario())


def test_unfair_admission_keeps_one_queue_and_max_queued() -> None:
    async def scenario() -> None:
        admission = Admission(1, max_queued=0, queue_timeout=30, fair=False)
        assert await admission.enter("hog")
        assert not await admission.enter("victim")  # no queue: 503 whoever asks

    asyncio.run(scenario())


def test_a_wait_that_runs_out_takes_nothing() -> None:
    async def scenario() -> None:
        admission = Admission(1, max_queued=1, queue_timeout=0.05)
        assert await admission.enter("a")
        assert not await admission.enter("b")  # nothing frees up in time
        assert admission.queued == 0 and admission.inflight == 1
        admission.leave(1, "a")
        assert admission.inflight == 0 and admission.places.callers <= 2

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("by", "headers", "caller"),
    [
        ("address", [], "10.0.0.7"),
        ("connection", [], "10.0.0.7:40000"),
        ("forwarded-for", [(b"x-forwarded-for", b"1.2.3.4, 192.0.2.9")], "192.0.2.9"),
        ("forwarded-for", [], "10.0.0.7"),
        ("off", [], None),
    ],
)
def test_callers_are_identified_by_the_chosen_address(
    by: str, headers: list[tuple[bytes, bytes]], caller: str | None
) -> None:
    identify = CallerIdentity(by)  # type: ignore[arg-type]
    scope = {"type": "http", "client": ("10.0.0.7", 40000), "headers": headers}
    assert identify(scope) == caller
    assert identify.fair is (by != "off")
    with pytest.raises(ConfigError):
        CallerIdentity("token-ish")  # type: ignore[arg-type]


def test_each_of_several_tokens_is_a_caller_and_no_token_shows_in_its_key() -> None:
    identify = CallerIdentity("address", ["tenant-a-secret", "tenant-b-secret"])

    def scope(token: str | None, port: int = 40000) -> dict[str, object]:
        headers = [(b"authorization", f"Bearer {token}".encode())] if token else []
        return {"type": "http", "client": ("10.0.0.7", port), "headers": headers}

    a, b = identify(scope("tenant-a-secret")), identify(scope("tenant-b-secret"))
    assert a != b and a == identify(scope("tenant-a-secret", port=40001))
    assert a is not None and "secret" not in a and a.startswith("token:")
    # A token the server does not have, or none: the address.
    assert identify(scope("forged")) == identify(scope(None)) == "10.0.0.7"
    # One token is no identity: every holder shares it.
    assert CallerIdentity("address", ["only"])(scope("only")) == "10.0.0.7"
    # Another process (another random key) names the same tenant differently.
    assert CallerIdentity("address", ["tenant-a-secret", "x"])(scope("tenant-a-secret")) != a


def test_any_of_several_bearer_tokens_passes() -> None:
    tokens = (b"tenant-a-secret", b"tenant-b-secret")
    assert bearer_token_ok([(b"authorization", b"Bearer tenant-b-secret")], tokens)
    assert not bearer_token_ok([(b"authorization", b"Bearer tenant-c-secret")], tokens)
    assert not bearer_token_ok([], tokens)
    assert bearer_token_ok([(b"authorization", b"bearer tenant-a-secret")], b"tenant-a-secret")
