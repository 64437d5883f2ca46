"""The adaptive window's arithmetic (:class:`verifleet.limits.Window`), on an
injected clock: every rule is a count, none a duration."""

from __future__ import annotations

import pytest

from verifleet.limits import POLICY, AdaptivePolicy, EndpointLimits, LocalCallGate, Window
from verifleet.schemas import ModelConfig

CEILING = 256


def _succeed(window: Window, times: int, *, in_flight: int, latency: float = 0.1) -> None:
    for _ in range(times):
        window.succeeded(CEILING, latency=latency, in_flight=in_flight, now=0.0, policy=POLICY)


def test_slow_start_adds_one_call_per_success_until_the_first_pushback() -> None:
    window = Window()
    first = int(POLICY.initial)
    assert window.limit(CEILING) == first
    _succeed(window, first, in_flight=first)  # one round trip of a full window ...
    assert window.limit(CEILING) == 2 * first  # ... doubles it
    _succeed(window, 2 * first, in_flight=2 * first)
    assert window.limit(CEILING) == 4 * first


def test_a_mostly_unused_window_does_not_grow() -> None:
    window = Window()
    first = int(POLICY.initial)
    _succeed(window, 500, in_flight=first // 2 - 1)  # fewer than half in use
    assert window.limit(CEILING) == first


def test_a_configured_cap_is_where_the_window_starts() -> None:
    # The user said the endpoint takes max_concurrency calls: no slow start
    # below it. Without one, the window starts at the policy's initial size.
    gate = LocalCallGate(max_wait=0)
    capped = ModelConfig.parse("http://127.0.0.1:9/v1#capped", max_concurrency=48)
    free = ModelConfig.parse("http://127.0.0.1:9/v1#free")
    tiny = ModelConfig.parse("http://127.0.0.1:9/v1#tiny", max_concurrency=3)
    assert gate.limit(capped) == 48
    assert gate.limit(free) == int(POLICY.initial)
    assert gate.limit(tiny) == 3
    limits = EndpointLimits.of(capped)
    assert limits is not None and POLICY.start(limits) == 48.0
    # What the window learns stays: a refusal still shrinks it from there.
    window = Window(size=POLICY.start(limits))
    window.pushed_back(in_flight=48, now=1.0, started=0.5, policy=POLICY)
    assert window.limit(CEILING) == int(0.9 * 48)


def test_never_above_the_ceiling() -> None:
    window = Window()
    for _ in range(200):
        window.succeeded(20, latency=0.1, in_flight=20, now=0.0, policy=POLICY)
    assert window.size == 20 and window.limit(20) == 20
    assert Window(size=50.0).limit(8) == 8  # a lowered ceiling applies at once


def test_refusals_of_calls_admitted_before_a_decrease_shrink_once() -> None:
    window = Window(size=80.0)
    for _ in range(10):  # the calls in flight at a refusal all come back refused
        window.pushed_back(in_flight=66, now=100.0, started=99.5, policy=POLICY)
    # one decrease; the other nine were counted in its 66 and never held by
    # the endpoint (the burst's brake): the peak is what it held
    assert window.peak == 66 - 9
    assert window.size == pytest.approx(0.9 * 57)
    # a call admitted under the new window refused too: still too large
    window.pushed_back(in_flight=50, now=100.2, started=100.1, policy=POLICY)
    assert window.size == pytest.approx(0.9 * 50)
    assert window.peak == 50


def test_the_burst_brake_settles_slow_start_at_what_the_endpoint_held() -> None:
    # A scripted slow start against an endpoint that holds 64 calls (a run of
    # `verifleet run`, N = 600, L = 0.5 s): the window grew to 88 before the
    # first 429 came back with 72 calls in flight, five more of that burst
    # came back refused after it, and two of the 72 were answered but not yet
    # counted out.
    window = Window(size=88.0)
    window.pushed_back(in_flight=72, now=12.324, started=12.277, policy=POLICY)
    assert window.limit(CEILING) == 64  # 0.9 x 72: still at the endpoint's limit
    for started in (12.276, 12.306, 12.275, 12.322, 12.300):
        window.pushed_back(in_flight=66, now=12.33, started=started, policy=POLICY)
    assert window.peak == 67
    assert window.limit(CEILING) == 60  # below the 64 held: the next call fits
    # a call admitted under it that the endpoint still refuses is a refusal
    # soon after a decrease: that one still pauses the endpoint
    assert window.pause_applies(started=12.4, now=12.45, policy=POLICY)
    assert not window.pause_applies(started=12.3, now=12.45, policy=POLICY)
    # recovery climbs to the corrected peak - 1, not to the 71 the burst
    # suggested
    rounds = 0
    while window.size < 66:
        _succeed(window, int(window.size), in_flight=int(window.size))
        rounds += 1
    assert rounds <= 7 and window.peak == 67


def test_the_burst_brake_takes_at_most_half_of_the_peak() -> None:
    # Slow start's window at 60 with 40 in flight, all refused: the brake
    # stops at half of them, the rest is the decreases and pauses of the new
    # calls' refusals.
    window = Window(size=60.0)
    window.pushed_back(in_flight=40, now=5.0, started=4.9, policy=POLICY)
    for _ in range(39):
        window.pushed_back(in_flight=39, now=5.1, started=4.8, policy=POLICY)
    assert window.peak == 20 and window.size == pytest.approx(0.9 * 20)


def test_no_brake_when_the_window_was_no_larger_than_the_calls_in_flight() -> None:
    # A window at its configured 4 with 4 in flight, 3 refused: no overshoot
    # (a rate limit or a quota refuses what it held): one decrease, as before.
    window = Window(size=4.0)
    for _ in range(3):
        window.pushed_back(in_flight=4, now=5.0, started=4.9, policy=POLICY)
    assert window.peak == 4 and window.size == pytest.approx(0.9 * 4)
    # nor after a decrease that did not end slow start
    window = Window(size=70.0, peak=66.0)
    window.pushed_back(in_flight=68, now=9.0, started=8.9, policy=POLICY)
    window.pushed_back(in_flight=67, now=9.0, started=8.8, policy=POLICY)
    assert window.peak == 68


def test_refusals_after_a_latency_decrease_take_nothing_off_its_peak() -> None:
    # The calls the latency signal counted were all held (queued) by the
    # endpoint: no burst to take off.
    window = Window(size=80.0, smooth=0.1)
    window.pushed_back(in_flight=60, now=10.0, policy=POLICY)
    window.pushed_back(in_flight=60, now=10.1, started=9.9, policy=POLICY)
    assert window.peak == 60 and window.size == pytest.approx(0.9 * 60)


def test_the_latency_signal_shrinks_once_per_hold() -> None:
    window = Window(size=80.0, smooth=0.1)
    window.pushed_back(in_flight=60, now=10.0, policy=POLICY)
    window.pushed_back(in_flight=50, now=10.0 + POLICY.hold / 2, policy=POLICY)
    assert window.size == pytest.approx(0.9 * 60)
    window.pushed_back(in_flight=50, now=10.0 + POLICY.hold, policy=POLICY)
    assert window.size == pytest.approx(0.9 * 50)


def test_recovery_is_fast_below_the_last_peak_and_probing_slow_above_it() -> None:
    window = Window(size=80.0)
    window.pushed_back(in_flight=66, now=0.0, started=0.0, policy=POLICY)  # 59.4, peak 66
    rounds = 0
    while window.size < 65:  # below peak - 1: about +1 per window's worth of successes
        _succeed(window, int(window.size), in_flight=int(window.size))
        rounds += 1
    assert rounds <= 7
    probing = 0
    while window.size < 66:  # at the peak: a slot only after many round trips
        _succeed(window, int(window.size), in_flight=int(window.size))
        probing += 1
    assert probing >= 80
    while window.size < 100:  # ... faster the longer the endpoint takes more
        _succeed(window, int(window.size), in_flight=int(window.size))
        probing += 1
    assert probing <= 250


def test_a_sustained_latency_rise_is_pushback_and_one_stalled_call_is_not() -> None:
    window = Window()
    _succeed(window, 20, in_flight=16, latency=0.1)
    assert window.peak is None
    _succeed(window, 1, in_flight=16, latency=5.0)  # one stall: 50x the baseline
    assert window.peak is None
    before = window.size
    _succeed(window, 40, in_flight=30, latency=0.4)  # queueing: 4x, call after call
    assert window.peak == 30 and window.size < before


def test_an_instant_endpoint_slowed_by_the_client_is_not_pushback() -> None:
    window = Window()
    _succeed(window, 20, in_flight=16, latency=0.001)
    _succeed(window, 50, in_flight=16, latency=0.010)  # 10x, but by 9 ms only
    assert window.peak is None and window.size > 16


def test_a_policy_turns_the_latency_signal_off() -> None:
    window = Window()
    deaf = AdaptivePolicy(latency_tolerance=1e9)
    for latency in (0.1, *([10.0] * 50)):
        window.succeeded(CEILING, latency=latency, in_flight=16, now=0.0, policy=deaf)
    assert window.peak is None
