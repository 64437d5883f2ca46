"""The result store shared by a worker's threads pool: concurrent writes and
reads from many threads keep every blob intact (zstd contexts are per thread)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from _support.factories import make_result

from verifleet.store import ResultStore

pytestmark = pytest.mark.integration

THREADS = 16
UNITS = 400


def test_concurrent_writes_and_reads_round_trip(redis_url: str) -> None:
    store = ResultStore(redis.Redis.from_url(redis_url), prefix="vfthreads")
    store.create_job("j", benchmark_json="{}", config_json="{}", total_units=UNITS)
    # Long distinct texts make each compression take long enough to overlap
    # with other threads' (one shared zstd context corrupted blobs this way).
    written = {
        f"k{i}": make_result(f"q{i}-" + "x" * (i % 50) * 40, verified=i % 2 == 0)
        for i in range(UNITS)
    }

    def write(key: str) -> None:
        store.write_unit("j", f"u-{key}", [written[key]], [key])

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(write, written))
        read = list(pool.map(lambda _i: list(store.iter_results("j")), range(4)))

    assert store.progress("j").done_units == UNITS
    expected = sorted(r.metadata.question_id for r in written.values())
    for results in read:
        assert sorted(r.metadata.question_id for r in results) == expected
