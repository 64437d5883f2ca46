"""Run an iterator one step ahead in a background thread.

An export from Redis alternates between waiting on the server, decompressing (both
without the GIL) and converting rows (with it). Fetching the next page while the
current one is converted overlaps the two on a second core.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterable
from typing import Generic, TypeVar

__all__ = ["prefetched"]

T = TypeVar("T")

# Bounded waits so that a producer blocked on a full queue notices a consumer that
# went away (it checks the stop flag between attempts).
_POLL_SECONDS = 0.1


class _Failed:
    """What the producer puts in the queue when the source raised."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class _Done:
    """What the producer puts in the queue when the source is exhausted."""


class _Producer(Generic[T]):
    def __init__(self, source: Iterable[T], depth: int) -> None:
        self.items: queue.Queue[T | _Failed | _Done] = queue.Queue(maxsize=depth)
        self.stop = threading.Event()
        self._source = source
        self.thread = threading.Thread(target=self._run, name="verifleet-prefetch", daemon=True)

    def _put(self, item: T | _Failed | _Done) -> bool:
        while not self.stop.is_set():
            try:
                self.items.put(item, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            for item in self._source:
                if not self._put(item):
                    return
        # Handed to the consumer, which re-raises it in its own thread.
        except BaseException as exc:
            self._put(_Failed(exc))
            return
        self._put(_Done())


def prefetched(source: Iterable[T], *, depth: int = 2) -> Generator[T, None, None]:
    """Yield the items of ``source``, produced by a background thread ahead of use.

    At most ``depth`` items wait in between, which bounds the extra memory. When
    the consumer stops early (closes the generator), the thread stops after its
    current item and is joined.

    Raises:
        Whatever ``source`` raises, in the consumer's thread, at the position where
        the failing item would have been.
        ValueError: ``depth`` is below 1.
    """
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    return _consume(_Producer(source, depth))


def _consume(producer: _Producer[T]) -> Generator[T, None, None]:
    producer.thread.start()
    try:
        while True:
            item = producer.items.get()
            if isinstance(item, _Done):
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        producer.stop.set()
        producer.thread.join()
