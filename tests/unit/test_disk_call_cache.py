"""The local call cache's SQLite file under concurrent first use.

Threads opening a new cache file at once raced on its set-up: switching the
file to WAL answers "database is locked" without waiting, and in a reward run
that failed a judge call, so a correct rollout was scored 0.0 (found by
``test_reward_scoring_with_cache_pays_once`` failing one run in three).
"""

from __future__ import annotations

import threading
from pathlib import Path

from verifleet.pipeline._llm._disk_cache import DiskCallCache


def test_threads_opening_a_new_cache_file_at_once_all_succeed(tmp_path: Path) -> None:
    errors: list[BaseException] = []
    for trial in range(30):
        cache = DiskCallCache(tmp_path / f"c{trial}" / "calls.sqlite3")
        start = threading.Barrier(6)

        def use(n: int, cache: DiskCallCache = cache, start: threading.Barrier = start) -> None:
            start.wait()
            try:
                cache.get(f"k{n}")
                cache.put(f"k{n}", f"v{n}".encode())
            except BaseException as exc:  # every failure is the finding
                errors.append(exc)

        threads = [threading.Thread(target=use, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [cache.get(f"k{n}") for n in range(6)] == [f"v{n}".encode() for n in range(6)]
    assert errors == []


def test_two_caches_on_one_new_file_share_it(tmp_path: Path) -> None:
    # As two processes of one machine do: each object sets the file up itself.
    path = tmp_path / "calls.sqlite3"
    first, second = DiskCallCache(path), DiskCallCache(path)
    first.put("k", b"v")
    assert second.get("k") == b"v"
