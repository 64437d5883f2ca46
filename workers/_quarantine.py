"""Poison units: a unit whose run kills or freezes the worker process running it.

Each start of a unit is counted in Redis as the unit is taken up
(``ResultStore.begin_unit``): a start while an earlier one of the same unit never
finished makes it a *suspect*. A process runs many units at once, so a death
does not say which of them caused it: a suspect therefore runs alone in its
process (:mod:`._isolation`), and only those lone runs are counted against it
(``ResultStore.begin_lone_run``). A unit that killed its worker (the OOM killer,
a crash) or froze it (no heartbeat: the reaper hands its message on, the
supervisor replaces the process) in its first try and in ``unit_tries - 1`` lone
runs after it (``VERIFLEET_UNIT_TRIES``, default 3 tries in all) is not run
again: its next start stores one errored result per parsing model saying what
happened, counted once like any result, and the job goes on. A unit that only
shared a process with a poison unit runs alone next time and finishes.

A unit only ever slow is not a poison unit: its worker beats, nobody hands it
on, and it ends at the unit deadline like any other.
"""

from __future__ import annotations

import os
import re
import signal

__all__ = ["QUARANTINED", "TEST_FAULT_ENV", "fault_for_tests", "quarantine_error"]

#: What the task returns for a unit it quarantined.
QUARANTINED = "quarantined"

#: Test-only fault injection: ``freeze:<question id>``, ``kill:<question id>``
#: or ``term:<question id>``, comma-separated.
TEST_FAULT_ENV = "VERIFLEET_TEST_FAULT"


def quarantine_error(tries: int) -> str:
    """The ``metadata.error`` of a quarantined unit's results: ``tries`` runs,
    all but the first alone in their worker process, each ended by that
    process dying or freezing."""
    return (
        f"unit quarantined: it was started {tries} times and each time the worker process "
        "running it was killed or stopped answering (no heartbeat) before it finished "
        f"({tries - 1} of them with no other unit running in that process, so the unit "
        "itself was the cause); it is not run again"
    )


def fault_for_tests(question_id: str) -> None:
    """Freeze, kill or SIGTERM this worker process when a unit of the question
    named in ``VERIFLEET_TEST_FAULT`` starts; nothing otherwise.

    The fleet tests need a unit that freezes its worker the way a template once
    could (a regular expression backtracking in the host while holding the GIL,
    so that no thread of the process, heartbeats included, runs again) or kills
    it (as the OOM killer would), or sends it the SIGTERM a stray signal would
    (Celery then shuts down warmly and exits 0). Templates run in sandbox executors and the host
    interprets nothing they make, so no real template does either any more: this
    hook stands in for the next bug that would.
    """
    faults = os.environ.get(TEST_FAULT_ENV)
    if not faults:
        return
    for fault in faults.split(","):
        action, _, target = fault.partition(":")
        if target != question_id:
            continue
        if action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif action == "term":
            os.kill(os.getpid(), signal.SIGTERM)
        elif action == "freeze":
            # Catastrophic backtracking in C with the GIL held: 2**64 steps.
            re.fullmatch(r"(a+)+", "a" * 64 + "!")
