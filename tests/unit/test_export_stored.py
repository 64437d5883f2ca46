"""Parquet from stored result JSON (the fast export path) equals the model path.

The reference is the model path: validate each stored JSON into a
``VerificationResult`` and write it with ``write_results``. The stored path must give
the same Arrow table, the same file content and the same results read back, for
every shape of result the export round-trip property test generates, and must fall
back to validation for stored JSON the current models would not dump.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _support.factories import make_result
from _support.result_variety import varied_results
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# The strategies of the round-trip property test: every section and optional field.
from test_export_roundtrip import results as any_result

from verifleet.orchestrator import RESULT_ARROW_SCHEMA, read_results, write_results
from verifleet.results import write_stored_parquet
from verifleet.results._export.layout import result_to_row
from verifleet.results._export.parquet import ParquetResultWriter
from verifleet.results._export.prefetch import prefetched
from verifleet.results._export.stored import stored_batch
from verifleet.schemas import ExportError, VerificationResult, VerificationResultSet
from verifleet.store import result_key

JOB_IDS = st.none() | st.text(max_size=8)


def stored(result: VerificationResult) -> bytes:
    """What ``ResultStore.write_unit`` keeps for a result (before compression)."""
    return result.model_dump_json().encode()


def model_batch(results: list[VerificationResult], job_id: str | None) -> pa.RecordBatch:
    rows = [result_to_row(r, job_id) for r in results]
    return pa.RecordBatch.from_pylist(rows, schema=RESULT_ARROW_SCHEMA)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(batch=st.lists(any_result, max_size=5), job_id=JOB_IDS)
def test_stored_batch_equals_the_model_rows(
    batch: list[VerificationResult], job_id: str | None
) -> None:
    fast = stored_batch([stored(r) for r in batch], job_id)
    assert fast.schema.equals(RESULT_ARROW_SCHEMA, check_metadata=True)
    assert fast.equals(model_batch(batch, job_id))


def test_varied_results_give_the_same_batch_with_and_without_a_job() -> None:
    batch = varied_results()
    for job_id in (None, "job-1"):
        fast = stored_batch([stored(r) for r in batch], job_id)
        assert fast.equals(model_batch(batch, job_id)), job_id
    keys = stored_batch([stored(r) for r in batch], "job-1").column("result_key").to_pylist()
    assert keys == [result_key(r, job_id="job-1") for r in batch]


def _pages(blobs: list[bytes], size: int) -> Iterator[list[bytes]]:
    for start in range(0, len(blobs), size):
        yield blobs[start : start + size]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(batch=st.lists(any_result, max_size=6), page=st.integers(1, 4))
def test_stored_file_equals_the_model_file_and_reads_back(
    batch: list[VerificationResult], page: int
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        fast, slow = Path(folder) / "fast.parquet", Path(folder) / "slow.parquet"
        blobs = [stored(r) for r in batch]
        # Pages of another size than the batches: rows regroup into batches of 2.
        count = write_stored_parquet(_pages(blobs, page), fast, job_id="j", batch_size=2)
        assert count == len(batch)
        write_results(batch, slow, job_id="j", batch_size=2)
        assert pq.read_table(fast).equals(pq.read_table(slow))
        assert pq.read_metadata(fast).num_row_groups == pq.read_metadata(slow).num_row_groups
        assert read_results(fast) == read_results(slow) == VerificationResultSet(results=batch)


def test_varied_results_file_reads_back_equal(tmp_path: Path) -> None:
    batch = varied_results() * 3
    path = tmp_path / "r.parquet"
    assert write_stored_parquet(_pages([stored(r) for r in batch], 4), path, batch_size=5) == 21
    assert read_results(path) == VerificationResultSet(results=batch)
    verdicts = pq.read_table(path, columns=["verify_result"]).column(0).to_pylist()
    assert verdicts[:7] == [True, False, None, True, False, None, None]


def _json(result: VerificationResult) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(result.model_dump_json())
    return loaded


def test_stored_json_in_another_shape_is_validated_like_the_model_path() -> None:
    """JSON the current models would not dump goes through validation: defaults,
    computed ids and sorted tools come out exactly as on the model path."""
    older = _json(varied_results()[4])
    del older["metadata"]["scenario_path"]  # written before the field existed
    del older["template"]["agent_metrics"]
    del older["used_full_trace"]
    unsorted = _json(make_result("q2"))
    unsorted["metadata"]["answering"]["tools"] = ["zeta", "alpha"]
    no_id = _json(make_result("q3"))
    no_id["metadata"]["result_id"] = ""
    coerced = _json(make_result("q4"))
    coerced["metadata"]["replicate"] = "3"  # Arrow refuses a str; pydantic coerces it
    variants = [older, unsorted, no_id, coerced]
    blobs = [json.dumps(v).encode() for v in variants]
    models = [VerificationResult.model_validate_json(b) for b in blobs]
    assert models[1].metadata.answering.tools == ["alpha", "zeta"]
    assert models[2].metadata.result_id != ""
    assert models[3].metadata.replicate == 3
    for job_id in (None, "j"):
        assert stored_batch(blobs, job_id).equals(model_batch(models, job_id))
        # One at a time too: each row alone must take the right path.
        for blob, model in zip(blobs, models, strict=True):
            assert stored_batch([blob], job_id).equals(model_batch([model], job_id))


@pytest.mark.parametrize(
    ("blob", "problem"),
    [
        (b'{"metadata": ', "not valid JSON"),
        (b"[1, 2]", "not a valid result"),
        (b'{"metadata": {"question_id": "q"}}', "not a valid result"),
    ],
)
def test_an_invalid_stored_result_fails_with_its_position(
    tmp_path: Path, blob: bytes, problem: str
) -> None:
    path = tmp_path / "r.parquet"
    path.write_bytes(b"previous")
    good = [stored(make_result(f"q{i}")) for i in range(3)]
    with pytest.raises(ExportError, match=rf"stored result 4: {problem}"):
        write_stored_parquet([good, [good[0], blob]], path, batch_size=2)
    assert path.read_bytes() == b"previous", "a failed export leaves the file alone"
    assert [p.name for p in tmp_path.iterdir()] == ["r.parquet"], "no temporary file left"


def test_an_unknown_field_is_rejected_as_on_the_model_path(tmp_path: Path) -> None:
    extra = _json(make_result("q1"))
    extra["template"]["invented"] = 1
    with pytest.raises(ExportError, match="stored result 0: not a valid result"):
        write_stored_parquet([[json.dumps(extra).encode()]], tmp_path / "r.parquet")


def test_a_value_arrow_cannot_hold_fails_as_on_the_model_path(tmp_path: Path) -> None:
    huge = make_result("q1", replicate=2**70)  # pydantic takes it, int64 cannot
    with pytest.raises(ExportError, match="cannot write a batch"):
        write_results([huge], tmp_path / "slow.parquet")
    with pytest.raises(ExportError, match="cannot write a batch"):
        write_stored_parquet([[stored(huge)]], tmp_path / "fast.parquet")
    assert list(tmp_path.iterdir()) == []


def test_models_and_stored_json_keep_their_order_in_one_writer(tmp_path: Path) -> None:
    batch = [make_result(f"q{i}") for i in range(7)]
    path = tmp_path / "mixed.parquet"
    with ParquetResultWriter(path, batch_size=3, background=True) as writer:
        for index, result in enumerate(batch):
            if index % 3 == 1:
                writer.write(result)
            else:
                writer.write_stored(stored(result))
    assert read_results(path) == VerificationResultSet(results=batch)


def test_background_writing_gives_the_same_file(tmp_path: Path) -> None:
    batch = varied_results() * 4
    for background in (False, True):
        with ParquetResultWriter(
            tmp_path / f"{background}.parquet", batch_size=3, background=background
        ) as writer:
            writer.write_many(batch)
    assert pq.read_table(tmp_path / "False.parquet").equals(
        pq.read_table(tmp_path / "True.parquet")
    )


def test_prefetched_yields_everything_in_order_then_reraises() -> None:
    def source() -> Iterator[int]:
        yield from range(5)
        raise RuntimeError("redis went away")

    seen: list[int] = []
    with pytest.raises(RuntimeError, match="redis went away"):
        for item in prefetched(source(), depth=2):
            seen.append(item)
    assert seen == [0, 1, 2, 3, 4]


def test_prefetched_stops_its_thread_when_the_consumer_stops() -> None:
    produced: list[int] = []

    def endless() -> Iterator[int]:
        count = 0
        while True:
            produced.append(count)
            yield count
            count += 1

    before = threading.active_count()
    ahead = prefetched(endless(), depth=2)
    assert [next(ahead) for _ in range(3)] == [0, 1, 2]
    ahead.close()
    assert threading.active_count() == before
    # Bounded read-ahead: what was taken plus the queue plus one in hand.
    assert len(produced) <= 3 + 2 + 1
    with pytest.raises(ValueError, match="depth"):
        prefetched(endless(), depth=0)
