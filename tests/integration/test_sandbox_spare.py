"""The spare child: the router keeps one child of the spawner forked ahead and
gives it to the next question, so that the fork is off that question's path.

The test process reads its own executor's tree through /proc (``seccomp`` mode:
no pid namespace hides it). A spare is a child of the spawner that leads no
process group yet (a child takes a group of its own with its first request).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from _support.hostile import HONEST_TEMPLATE
from _support.processes import spawner_children

from verifleet.sandbox import SandboxPool, SandboxSettings

pytestmark = pytest.mark.integration


def _spares(before: dict[int, bool]) -> set[int]:
    """Spares that appeared since ``before`` (waiting a moment for the fork)."""
    end = time.monotonic() + 5.0
    while True:
        found = {pid for pid, leads in spawner_children().items() if not leads} - set(before)
        if found or time.monotonic() > end:
            return found
        time.sleep(0.01)


def _source(number: int) -> str:
    return HONEST_TEMPLATE + f"# question {number}\n"


@contextmanager
def _first_question_and_its_spare() -> Iterator[tuple[SandboxPool, dict[int, bool], int]]:
    """A one-executor pool with a process per question, scoped to one job,
    after its first question: the pool, the spawner's children before it
    started, and the spare forked for the next question."""
    before = spawner_children()
    pool = SandboxPool(SandboxSettings(mode="seccomp", pool_size=1, fresh_state="template"))
    try:
        with pool.scoped("job"):
            pool.load_template(_source(1), "q1")
            (spare,) = _spares(before)
            yield pool, before, spare
    finally:
        pool.close()


def test_the_next_question_runs_in_the_spare_forked_before_it() -> None:
    with _first_question_and_its_spare() as (pool, before, spare):
        handle = pool.load_template(_source(2), "q2")
        # The spare now serves q2: it leads its own group.
        assert spawner_children().get(spare) is True
        assert pool.evaluate(handle, {"value": "Paris"}, "").verification is not None
        # ... and another spare was forked for the question after it.
        (second,) = _spares({**before, spare: True})
        assert second != spare


def test_a_spare_killed_from_outside_is_replaced() -> None:
    with _first_question_and_its_spare() as (pool, _before, spare):
        os.kill(spare, signal.SIGKILL)
        while Path(f"/proc/{spare}").exists():  # the spawner reaps it
            time.sleep(0.01)
        handle = pool.load_template(_source(2), "q2")
        answer = pool.evaluate(handle, {"value": "Paris"}, "")
        assert answer.verification is not None and answer.verification.field_ok
        # Served by a fresh fork, not by the dead spare's pid.
        assert spare not in spawner_children()
