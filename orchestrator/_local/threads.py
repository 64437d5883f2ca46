"""The local runner's threads: a pool that can give a unit up.

``concurrent.futures.ThreadPoolExecutor`` cannot: its threads are joined when the
pool shuts down and again when the interpreter exits, so one unit stuck in host
code (a call that never returns) would keep ``verifleet run`` from ever ending.
Here the threads are daemons and nothing joins them; a unit given up
(:meth:`UnitThreads.abandon`) leaves its thread behind and the pool starts
another in its place, so the run keeps its concurrency and ends on time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from queue import SimpleQueue
from typing import Any, TypeVar

__all__ = ["UnitThreads"]

_R = TypeVar("_R")


class UnitThreads:
    """Up to ``max_workers`` daemon threads (started as work arrives), plus one
    for each abandoned unit's thread.

    Args:
        max_workers: Threads that run work at once.
        name: Thread name prefix.
    """

    def __init__(self, max_workers: int, name: str) -> None:
        self._queue: SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = SimpleQueue()
        self._lock = threading.Lock()
        self._limit = max_workers
        self._threads = 0
        self._idle = 0
        self._name = name
        self._started: dict[Future[Any], float] = {}
        self._closed = False

    def submit(self, fn: Callable[[], _R]) -> Future[_R]:
        """Run ``fn`` on a thread; its future has its result or exception."""
        future: Future[_R] = Future()
        self._queue.put((future, fn))
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
            elif self._threads < self._limit:
                self._threads += 1
                threading.Thread(
                    target=self._work, name=f"{self._name}-{self._threads}", daemon=True
                ).start()
        return future

    def started(self, future: Future[Any]) -> float | None:
        """When ``future``'s work started (``time.monotonic()``), None if not yet."""
        return self._started.get(future)

    def abandon(self, future: Future[Any]) -> None:
        """Give ``future``'s work up: its thread stays where it is stuck and no
        longer counts; another takes its place."""
        future.cancel()
        with self._lock:
            self._started.pop(future, None)
            self._limit += 1

    def shutdown(self) -> None:
        """Let every thread end once its work is done; work not started yet is
        cancelled. Waits for nothing."""
        with self._lock:
            self._closed = True
            threads = self._threads
        for _ in range(threads):
            self._queue.put(None)

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, fn = item
            if self._closed:
                future.cancel()
            elif future.set_running_or_notify_cancel():
                with self._lock:
                    self._started[future] = time.monotonic()
                try:
                    result = fn()
                except BaseException as exc:
                    self._finish(future, exc)
                else:
                    self._finish(future, None, result)
            with self._lock:
                self._idle += 1

    def _finish(self, future: Future[Any], exc: BaseException | None, result: Any = None) -> None:
        with self._lock:
            abandoned = self._started.pop(future, None) is None
            if abandoned:
                # Back from a unit given up: nobody waits for its result, and
                # the place it lent to its replacement is returned.
                self._limit -= 1
        if abandoned:
            return
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)
