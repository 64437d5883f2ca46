"""A job's results exported from a real redis-server through the fast Parquet path
(stored JSON straight to Arrow) read back equal to what the workers stored, and the
file equals the one the validating path writes."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
import redis
import zstandard
from _support.result_variety import numbered

from verifleet.orchestrator import read_results, write_results
from verifleet.orchestrator._fleet.job import Job
from verifleet.orchestrator.cli import main
from verifleet.schemas import (
    Benchmark,
    ExportError,
    ModelConfig,
    VerificationConfig,
    VerificationResult,
)
from verifleet.store import ResultStore, result_key

pytestmark = pytest.mark.integration

PREFIX = "vftest"


def _stored_job(url: str, job_id: str, results: list[VerificationResult]) -> ResultStore:
    """A job whose results were written the way workers write them: a unit at a time,
    each result under its deterministic key."""
    store = ResultStore(redis.Redis.from_url(url), prefix=PREFIX)
    units = [results[start : start + 3] for start in range(0, len(results), 3)]
    # A real job's spec: the export writes the run's manifest from it.
    store.create_job(
        job_id,
        benchmark_json=Benchmark(name=job_id, questions=[]).model_dump_json(),
        config_json=VerificationConfig.build(
            answering_models=[ModelConfig.parse("http://127.0.0.1:9/v1#answerer")],
            parsing_models=[ModelConfig.parse("http://127.0.0.1:9/v1#judge")],
        ).model_dump_json(),
        total_units=len(units),
    )
    for number, unit in enumerate(units):
        keys = [result_key(r, job_id=job_id) for r in unit]
        store.write_unit(job_id, f"u{number}", unit, keys)
    return store


def _by_key(results: list[VerificationResult], job_id: str) -> dict[str, VerificationResult]:
    return {result_key(r, job_id=job_id): r for r in results}


def test_fast_export_reads_back_the_stored_results(redis_url: str, tmp_path: Path) -> None:
    # More than one HSCAN page and one Parquet batch (1,000 each).
    results = numbered(2_345)
    store = _stored_job(redis_url, "big", results)
    job = Job("big", redis_url, prefix=PREFIX)

    fast = tmp_path / "fast.parquet"
    assert job.export(fast) == len(results)

    back = read_results(fast).results
    assert _by_key(back, "big") == _by_key(results, "big")
    assert len(back) == len(results)
    # result_key holds the Redis field each result was stored under.
    keys = pq.read_table(fast, columns=["result_key"]).column(0).to_pylist()
    fields = {field.decode() for field in store.client.hkeys(store.keys("big").results)}
    assert sorted(keys) == sorted(fields)

    # The validating path over the same hash (same HSCAN order) writes the same file.
    slow = tmp_path / "slow.parquet"
    write_results(job.iter_results(), slow, job_id="big")
    assert pq.read_table(fast).equals(pq.read_table(slow))


def test_results_command_writes_parquet_through_the_fast_path(
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    results = numbered(40)
    _stored_job(redis_url, "cli", results)
    monkeypatch.setenv("VERIFLEET_PREFIX", PREFIX)
    out = tmp_path / "r.parquet"
    assert main(["results", "cli", "--redis", redis_url, "--out", str(out)]) == 0
    assert "40 results written" in capsys.readouterr().out
    assert _by_key(read_results(out).results, "cli") == _by_key(results, "cli")
    # Other formats still go through the models, and carry the same keys.
    csv = tmp_path / "r.csv"
    assert main(["results", "cli", "--redis", redis_url, "--out", str(csv)]) == 0
    assert _by_key(read_results(csv).results, "cli") == _by_key(results, "cli")


def test_a_corrupt_stored_result_fails_the_export_and_leaves_no_file(
    redis_url: str, tmp_path: Path
) -> None:
    store = _stored_job(redis_url, "bad", numbered(5))
    # What a writer outside verifleet could leave: valid zstd, not a result.
    blob = zstandard.ZstdCompressor().compress(b'{"metadata": {"question_id": 1}}')
    store.client.hset(store.keys("bad").results, "intruder", blob)
    out = tmp_path / "r.parquet"
    with pytest.raises(ExportError, match="not a valid result"):
        Job("bad", redis_url, prefix=PREFIX).export(out)
    assert list(tmp_path.iterdir()) == []
