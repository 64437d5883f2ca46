"""Suspect units run alone in their worker process.

A worker process runs many units at once (Celery's threads pool). When it dies
or freezes, every unit in flight in it comes back as a further try, the innocent
ones with the one that killed it. Counting those tries alike quarantined a second
tenant's unit that merely shared a process with a poison unit three times.

So a unit that comes back (its earlier start never finished: a *suspect*) runs
with no other unit running in its process: new units wait before they are taken
up (so they are not counted as started), units already running finish first.
Only a death during such a lone run is the suspect's own doing, and only those
count towards its quarantine (see :mod:`._quarantine`). An innocent unit is in a
shared death at most once per poison unit's first try, then runs alone and
finishes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["UnitGate"]


class UnitGate:
    """A process-wide readers-writer gate for units, preferring lone runs.

    Every unit holds :meth:`shared` while it runs; a suspect unit, already
    holding it, steps up to :meth:`alone` for its run. A thread waiting to run
    alone keeps new units from starting, so a suspect waits at most for the
    units already running (each bounded by the unit deadline).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0
        self._alone = False
        self._waiting_alone = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the gate with other units; waits while a unit runs or waits to
        run alone."""
        with self._cond:
            while self._alone or self._waiting_alone:
                self._cond.wait()
            self._running += 1
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()

    @contextmanager
    def alone(self) -> Iterator[None]:
        """Run with no other unit in this process; only from inside
        :meth:`shared`, which is held again afterwards."""
        with self._cond:
            self._running -= 1
            self._waiting_alone += 1
            self._cond.notify_all()
            try:
                while self._alone or self._running:
                    self._cond.wait()
            except BaseException:
                self._running += 1
                raise
            finally:
                self._waiting_alone -= 1
                self._cond.notify_all()
            self._alone = True
        try:
            yield
        finally:
            with self._cond:
                self._alone = False
                self._running += 1
                self._cond.notify_all()

    @property
    def running(self) -> int:
        """Units holding the gate now (tests and diagnostics)."""
        with self._cond:
            return self._running + (1 if self._alone else 0)
