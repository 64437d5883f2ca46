"""The worker's unit gate: a suspect unit runs alone in its process.

Real threads, no stand-ins: what the poison-unit quarantine relies on is that
while a suspect runs no other unit runs, that it waits for the units already
running, and that units arriving meanwhile wait instead of starting.
"""

from __future__ import annotations

import threading
import time

from verifleet.workers._isolation import UnitGate


def _spin_until(predicate, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "condition not reached"
        time.sleep(0.005)


def test_units_share_the_gate() -> None:
    gate = UnitGate()
    with gate.shared(), gate.shared():
        assert gate.running == 2
    assert gate.running == 0


def test_a_suspect_waits_for_running_units_and_new_ones_wait_for_it() -> None:
    gate = UnitGate()
    events: list[str] = []
    lock = threading.Lock()
    release_first = threading.Event()
    release_suspect = threading.Event()

    def log(what: str) -> None:
        with lock:
            events.append(what)

    def running_unit() -> None:
        with gate.shared():
            log("first runs")
            release_first.wait(5)
            log("first ends")

    def suspect() -> None:
        with gate.shared():
            with gate.alone():
                log("suspect alone")
                assert gate.running == 1
                release_suspect.wait(5)
                log("suspect ends")
            log("suspect shares again")

    def late_unit() -> None:
        with gate.shared():
            log("late runs")

    first = threading.Thread(target=running_unit)
    first.start()
    _spin_until(lambda: "first runs" in events)
    lone = threading.Thread(target=suspect)
    lone.start()
    # The suspect has stepped up and waits: a unit arriving now must not start.
    _spin_until(lambda: gate._waiting_alone == 1)
    late = threading.Thread(target=late_unit)
    late.start()
    time.sleep(0.1)
    assert events == ["first runs"]
    release_first.set()
    _spin_until(lambda: "suspect alone" in events)
    time.sleep(0.1)
    assert "late runs" not in events
    release_suspect.set()
    for thread in (first, lone, late):
        thread.join(5)
    assert events.index("first ends") < events.index("suspect alone")
    assert events.index("suspect ends") < events.index("late runs")
    assert gate.running == 0


def test_two_suspects_take_turns() -> None:
    gate = UnitGate()
    inside = 0
    most = 0
    lock = threading.Lock()

    def suspect() -> None:
        nonlocal inside, most
        with gate.shared(), gate.alone():
            with lock:
                inside += 1
                most = max(most, inside)
            time.sleep(0.02)
            with lock:
                inside -= 1

    threads = [threading.Thread(target=suspect) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert most == 1
    assert gate.running == 0
