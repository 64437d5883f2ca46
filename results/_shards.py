"""Result shards: finished results drained out of Redis into Parquet files
(``URL/<job id>/``: a local or shared path, or any fsspec URL), two columns,
``result_key`` and ``result`` (the result's JSON, as stored in Redis).

What makes it exactly once (docs/fleet.md, "Results leave Redis as the job
runs"): a shard is written completely (and flushed to disk for a local path)
*before* one script records it in the job's shard list and removes its results
from Redis (:meth:`~verifleet.store.ResultStore.record_shard`). Readers read only
recorded shards and keep each key once.
"""

from __future__ import annotations

import itertools
import os
import secrets
import time
from array import array
from collections.abc import Iterator, Sequence
from typing import Any

from verifleet.store import job_id_problem

from ._roots import location_problem

__all__ = ["read_shard", "shard_keys", "write_shard"]

_KEY, _RESULT = "result_key", "result"


def _fs(url: str) -> tuple[Any, str]:
    try:
        import fsspec
    except ImportError as exc:  # pragma: no cover - fsspec comes with the install
        raise RuntimeError(
            "--results-to needs fsspec (pip install fsspec, plus s3fs, gcsfs... for object stores)"
        ) from exc
    return fsspec.core.url_to_fs(url)


def write_shard(url: str, job_id: str, items: Sequence[tuple[str, bytes]]) -> str:
    """Write one shard of ``(result key, result JSON)`` items under
    ``url/<job_id>/``; returns the shard's URL once it is complete (and, on a
    local disk, synced).

    Raises:
        OSError: the location cannot be written (the caller keeps the results
            in Redis and tries again later).
        PermissionError: ``job_id`` is malformed or ``url``'s scheme is not
            accepted (checked before anything is opened).
        pyarrow.ArrowInvalid: a result is not valid UTF-8 (nothing is written).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    # Again here, whoever calls: a job id is a folder name, never a path.
    refusal = job_id_problem(job_id) or location_problem(url)
    if refusal:
        raise PermissionError(refusal)
    fs, root = _fs(url)
    folder = f"{root.rstrip('/')}/{job_id}"
    fs.makedirs(folder, exist_ok=True)
    path = f"{folder}/part-{time.time_ns():020d}-{secrets.token_hex(4)}.parquet"
    keys = _strings([key.encode() for key, _ in items], large=False)
    results = _strings([blob for _, blob in items], large=True)
    table = pa.Table.from_arrays([keys, results], names=[_KEY, _RESULT])
    with fs.open(path, "wb") as handle:
        pq.write_table(table, handle, compression="zstd")
        fileno = getattr(handle, "fileno", None)
        if callable(fileno):
            try:
                handle.flush()
                os.fsync(fileno())
            except (OSError, ValueError, AttributeError):
                pass  # not a local file: the store makes it durable on close
    written: str = fs.unstrip_protocol(path)
    return written


def _strings(values: Sequence[bytes], *, large: bool) -> Any:
    """An Arrow string array made straight from UTF-8 bytes.

    Not ``pa.array``: its first call imports pandas (about 50 MB in every worker
    process that drains, for good), and a ``str`` per value would copy the page
    once more. The buffers are the joined bytes and their offsets (native
    integers: Arrow's layout on the little-endian machines pyarrow supports).

    Raises:
        pyarrow.ArrowInvalid: a value is not valid UTF-8 (nothing is written).
    """
    import pyarrow as pa

    offsets = array("q" if large else "i", [0])
    offsets.extend(itertools.accumulate(len(value) for value in values))
    kind = pa.large_string() if large else pa.string()
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(values))]
    strings = pa.Array.from_buffers(kind, len(values), buffers)
    strings.validate(full=True)
    return strings


def read_shard(url: str) -> Iterator[tuple[str, bytes]]:
    """The ``(result key, result JSON)`` items of one shard, in its order.

    Raises:
        OSError: the shard cannot be read.
    """
    import pyarrow.parquet as pq

    fs, path = _fs(url)
    with fs.open(path, "rb") as handle:
        parquet = pq.ParquetFile(handle)
        for batch in parquet.iter_batches(batch_size=1000, columns=[_KEY, _RESULT]):
            keys = batch.column(0).to_pylist()
            results = batch.column(1).to_pylist()
            for key, result in zip(keys, results, strict=True):
                yield key, result.encode()


def shard_keys(url: str) -> list[str]:
    """The result keys in one shard (its key column only).

    Raises:
        OSError: the shard cannot be read.
    """
    import pyarrow.parquet as pq

    fs, path = _fs(url)
    with fs.open(path, "rb") as handle:
        keys: list[str] = pq.read_table(handle, columns=[_KEY]).column(0).to_pylist()
    return keys
