"""Results drained out of Redis into Parquet shards, against a real redis-server
and real files: every reader sees each result exactly once, whether a shard was
half-written by a killed drainer, written and never recorded, or recorded twice."""

from __future__ import annotations

from pathlib import Path

import redis
from _support.factories import make_result

from verifleet.results._drain import ResultDrain, StoredResults
from verifleet.results._roots import ResultsRoots
from verifleet.results._shards import read_shard, write_shard
from verifleet.store import JobStatus, ResultStore, result_key


def _store(url: str) -> ResultStore:
    return ResultStore(redis.Redis.from_url(url), prefix="vftest")


def _job_with_results(store: ResultStore, folder: Path, n: int) -> dict[str, str]:
    store.create_job(
        "j", benchmark_json="{}", config_json="{}", total_units=n, results_to=str(folder)
    )
    expected = {}
    for i in range(n):
        result = make_result(f"q{i:02d}", verified=i % 3 != 0)
        key = result_key(result, job_id="j")
        store.write_unit("j", f"u{i}", [result], [key])
        expected[key] = result.metadata.question_id
    return expected


def _read(store: ResultStore) -> list[str]:
    return [r.metadata.question_id for r in StoredResults(store, "j").results()]


def test_drained_results_are_read_once_from_shards_and_redis(
    redis_url: str, tmp_path: Path
) -> None:
    store = _store(redis_url)
    expected = _job_with_results(store, tmp_path, 12)
    drain = ResultDrain(store, roots=ResultsRoots([str(tmp_path)]), batch=5)
    # A done job is drained to the last result; a shard per 5.
    assert store.status("j") == JobStatus.DONE
    assert drain.candidates() == [("j", str(tmp_path))]
    assert drain.drain("j", str(tmp_path)) == 12
    assert store.client.hlen(store.keys("j").results) == 0
    assert len(list((tmp_path / "j").glob("part-*.parquet"))) == 3
    assert drain.candidates() == []

    # A drainer killed while writing left half a file; another wrote a shard and
    # died before recording it: neither is read.
    (tmp_path / "j" / "part-99999999999999999999-dead.parquet").write_bytes(b"PAR1\x00half")
    write_shard(str(tmp_path), "j", [(next(iter(expected)), b'{"not": "read"}')])
    # Two drainers that drained the same results recorded two shards of them.
    shards = sorted(store.client.hkeys(store.keys("j").shards))
    first = StoredResults(store, "j").shards()[0]
    again = write_shard(str(tmp_path), "j", list(read_shard(first)))
    store.client.hset(store.keys("j").shards, again, 5)

    assert sorted(_read(store)) == sorted(expected.values())
    stored = StoredResults(store, "j")
    assert sorted(stored.result_keys()) == sorted(expected)
    assert sum(len(page) for page in stored.json_pages()) == 12
    progress = store.progress("j")
    assert (progress.results, progress.done_units) == (12, 12)
    assert store.result_count("j") == 12
    some = list(expected)[3:5]
    assert [r.metadata.question_id for r in stored.get(some) if r] == [expected[k] for k in some]
    assert len(shards) == 3


def test_a_running_job_keeps_a_partial_batch_and_a_redelivery_writes_nothing(
    redis_url: str, tmp_path: Path
) -> None:
    store = _store(redis_url)
    store.create_job(
        "j", benchmark_json="{}", config_json="{}", total_units=10, results_to=str(tmp_path)
    )
    first = [make_result(f"q{i}") for i in range(7)]
    for i, r in enumerate(first):
        store.write_unit("j", f"u{i}", [r], [result_key(r, job_id="j")])
    drain = ResultDrain(store, roots=ResultsRoots([str(tmp_path)]), batch=5)
    assert drain.drain("j", str(tmp_path)) == 5
    # Two left: fewer than a shard while the job runs, so they stay.
    assert store.client.hlen(store.keys("j").results) == 2
    assert drain.candidates() == []
    # A redelivered unit whose results were drained writes nothing back.
    drained_key = result_key(first[0], job_id="j")
    store.write_unit("j", "u0", [first[0]], [drained_key])
    store.write_unit("j", "u1", [first[1]], [result_key(first[1], job_id="j")])
    assert store.client.hlen(store.keys("j").results) == 2
    assert store.progress("j").results == 7
    assert len(_read(store)) == 7
