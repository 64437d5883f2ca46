"""Parquet export and import: zstd, the explicit result schema, bounded batches."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType

import pyarrow as pa
import pyarrow.parquet as pq

from verifleet.schemas import ScenarioExecutionResult, VerificationResult

from .files import PathLike, export_error, publish, remove_quietly, temp_sibling
from .layout import (
    FORMAT_NAME,
    FORMAT_VERSION,
    RESULT_ARROW_SCHEMA,
    SOURCE_COLUMNS,
    Labels,
    batch_of_rows,
    fill_label,
    result_to_row,
    row_to_result,
)
from .manifest import MANIFEST_METADATA_KEY
from .prefetch import prefetched
from .scenarios import SCENARIO_METADATA_KEY, scenario_results_json
from .stored import StoredResultError, stored_batch

__all__ = ["DEFAULT_BATCH_SIZE", "ParquetResultWriter", "iter_parquet", "write_stored_parquet"]

DEFAULT_BATCH_SIZE = 1000
"""Rows per record batch (and Parquet row group). At a few KB per result this keeps a
writer or reader at a few MB of buffered rows, whatever the result count."""


class ParquetResultWriter:
    """Streams results into a Parquet file, one bounded batch at a time.

    Rows are buffered until ``batch_size`` are pending, then converted with the
    explicit :data:`RESULT_ARROW_SCHEMA` and written as one row group, so memory does
    not grow with the number of results and a column that is null in the first batch
    keeps its declared type. Results come as models (:meth:`write`) or as the JSON
    the result store keeps (:meth:`write_stored`, the same rows several times
    faster). The file is written under a temporary name next to
    ``path`` and moved into place by :meth:`close`; until then (or after an error)
    ``path`` is untouched. A writer is not thread-safe: feed it from one thread.

    Example:
        >>> with ParquetResultWriter("run.parquet") as writer:
        ...     writer.write_many(results)

    Args:
        path: Destination file.
        batch_size: Rows per batch and row group (at least 1).
        job_id: When given, each row's ``result_key`` column holds the deterministic
            unit key of the result within that job.
        compression_level: zstd level; pyarrow's default when None.
        background: Compress and write each batch in a background thread while the
            next one is built (Arrow does that without the GIL, so it runs on another
            core). At most one batch is in flight; its I/O error is then raised by
            the next call that flushes, or by :meth:`close`.
        labels: Human labels by answer, for the ``label_*`` columns of results
            written as models (stored results get null labels).

    Raises:
        ExportError: the file cannot be created, a result cannot be converted (e.g. an
            int beyond 64 bits, a value JSON cannot hold), or the writer is closed.
        ValueError: ``batch_size`` is below 1.
    """

    def __init__(
        self,
        path: PathLike,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        job_id: str | None = None,
        compression_level: int | None = None,
        background: bool = False,
        labels: Labels | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self._path = Path(path)
        self._batch_size = batch_size
        self._job_id = job_id
        self._labels = labels
        self._pending: list[dict[str, object]] = []
        # Stored JSON waiting for the next batch; only one of the two lists is ever
        # non-empty, so that rows keep the order they were written in.
        self._stored: list[bytes] = []
        self._count = 0
        self._closed = False
        self._io = ThreadPoolExecutor(1, "verifleet-parquet") if background else None
        self._in_flight: Future[None] | None = None
        self._scenarios: str | None = None
        self._manifest: str | None = None
        self._temp = temp_sibling(path)
        try:
            self._writer = pq.ParquetWriter(
                self._temp,
                RESULT_ARROW_SCHEMA,
                compression="zstd",
                compression_level=compression_level,
            )
        except (OSError, pa.ArrowException) as exc:
            remove_quietly(self._temp)
            raise export_error(path, f"cannot open a Parquet writer: {exc}") from exc

    @property
    def count(self) -> int:
        """Results accepted so far (written or pending)."""
        return self._count

    def write(self, result: VerificationResult) -> None:
        """Add one result; flushes a batch when ``batch_size`` rows are pending.

        Raises:
            ExportError: the writer is closed, or the result cannot be converted.
        """
        if self._closed:
            raise export_error(self._path, "writer is already closed")
        if self._stored:
            self._flush()
        try:
            row = result_to_row(result, self._job_id)
            fill_label(row, result, self._labels)
            self._pending.append(row)
        except ValueError as exc:
            raise export_error(
                self._path, f"result {result.metadata.result_id} cannot be stored: {exc}"
            ) from exc
        self._count += 1
        if len(self._pending) >= self._batch_size:
            self._flush()

    def write_stored(self, data: bytes) -> None:
        """Add one result given as the JSON the result store keeps for it.

        ``data`` is a result's ``model_dump_json()`` text. Its row equals the one
        :meth:`write` makes of the validated result, but no model is built when the
        JSON has the current models' shape (see :mod:`.stored`). The JSON is only
        read when its batch is flushed, so an invalid one fails a later call.

        Raises:
            ExportError: the writer is closed; or, at the flush, a stored result is
                not valid JSON, not a valid result or cannot be converted (the
                message gives its position among the results written).
        """
        if self._closed:
            raise export_error(self._path, "writer is already closed")
        if self._pending:
            self._flush()
        self._stored.append(data)
        self._count += 1
        if len(self._stored) >= self._batch_size:
            self._flush()

    def write_many(self, results: Iterable[VerificationResult]) -> int:
        """Add every result of an iterable (consumed lazily).

        Returns:
            How many results this call added.

        Raises:
            ExportError: as for :meth:`write`.
        """
        before = self._count
        for result in results:
            self.write(result)
        return self._count - before

    def set_scenario_results(self, scenario_results: Sequence[ScenarioExecutionResult]) -> None:
        """Keep ``scenario_results`` in the file's footer (key-value metadata under
        :data:`SCENARIO_METADATA_KEY`, as JSON); written by :meth:`close`.

        Raises:
            ExportError: the writer is closed.
        """
        if self._closed:
            raise export_error(self._path, "writer is already closed")
        self._scenarios = scenario_results_json(scenario_results)

    def set_manifest(self, manifest: dict[str, object]) -> None:
        """Keep the run ``manifest`` in the file's footer (key-value metadata under
        :data:`MANIFEST_METADATA_KEY`, as JSON); written by :meth:`close`.

        Raises:
            ExportError: the writer is closed, or the manifest is not JSON.
        """
        if self._closed:
            raise export_error(self._path, "writer is already closed")
        try:
            self._manifest = json.dumps(manifest, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise export_error(self._path, f"the run manifest is not JSON: {exc}") from exc

    def close(self) -> None:
        """Flush pending rows, finish the file and move it onto ``path``.

        Closing twice is a no-op.

        Raises:
            ExportError: the last batch or the footer cannot be written.
        """
        if self._closed:
            return
        try:
            self._flush()
            self._wait()
            if self._scenarios is not None:
                self._writer.add_key_value_metadata({SCENARIO_METADATA_KEY: self._scenarios})
            if self._manifest is not None:
                self._writer.add_key_value_metadata({MANIFEST_METADATA_KEY: self._manifest})
            self._writer.close()
        except BaseException:
            self.abort()
            raise
        self._closed = True
        self._stop_io()
        publish(self._temp, self._path)

    def abort(self) -> None:
        """Drop everything written so far; ``path`` is left as it was. Never raises."""
        if self._closed:
            return
        self._closed = True
        self._pending.clear()
        self._stored.clear()
        # The file is being thrown away: a failure of its last batch or of its footer
        # does not matter.
        with contextlib.suppress(Exception):
            self._wait()
        self._stop_io()
        with contextlib.suppress(OSError, pa.ArrowException):
            self._writer.close()
        remove_quietly(self._temp)

    def __enter__(self) -> ParquetResultWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def _flush(self) -> None:
        if self._stored:
            batch = self._stored_batch()
        elif self._pending:
            rows, self._pending = self._pending, []
            batch = self._row_batch(rows)
        else:
            return
        if self._io is None:
            self._write_batch(batch)
            return
        self._wait()
        self._in_flight = self._io.submit(self._write_batch, batch)

    def _write_batch(self, batch: pa.RecordBatch) -> None:
        try:
            self._writer.write_batch(batch)
        except (OSError, pa.ArrowException) as exc:
            raise export_error(self._path, f"cannot write a batch of results: {exc}") from exc

    def _wait(self) -> None:
        """Wait for the batch in flight; raises what writing it raised."""
        in_flight, self._in_flight = self._in_flight, None
        if in_flight is not None:
            in_flight.result()

    def _stop_io(self) -> None:
        if self._io is not None:
            self._io.shutdown(wait=True)

    def _row_batch(self, rows: list[dict[str, object]]) -> pa.RecordBatch:
        try:
            return batch_of_rows(rows)
        # OverflowError: an int beyond 64 bits, which pydantic accepts and Arrow cannot.
        except (OverflowError, pa.ArrowException) as exc:
            raise export_error(self._path, f"cannot write a batch of results: {exc}") from exc

    def _stored_batch(self) -> pa.RecordBatch:
        stored, self._stored = self._stored, []
        try:
            return stored_batch(stored, self._job_id)
        except StoredResultError as exc:
            position = self._count - len(stored) + exc.index
            raise export_error(self._path, f"stored result {position}: {exc}") from exc
        # OverflowError: an int beyond 64 bits, which pydantic accepts and Arrow cannot.
        except (OverflowError, pa.ArrowException) as exc:
            raise export_error(self._path, f"cannot write a batch of results: {exc}") from exc
        except ValueError as exc:  # a free-form value JSON cannot hold
            raise export_error(self._path, f"cannot store a result: {exc}") from exc


def _open(path: PathLike) -> pq.ParquetFile:
    try:
        # pre_buffer (on by default) caches the column chunks of every row group the
        # iteration will visit: Arrow memory would grow with the file, not one batch.
        parquet = pq.ParquetFile(path, pre_buffer=False)
    except FileNotFoundError as exc:
        raise export_error(path, "no such file") from exc
    except (OSError, pa.ArrowException) as exc:
        raise export_error(path, f"not a readable Parquet file: {exc}") from exc
    problem = _incompatibility(parquet.schema_arrow)
    if problem is not None:
        parquet.close()
        raise export_error(path, problem)
    return parquet


def _incompatibility(schema: pa.Schema) -> str | None:
    """Why a file with this schema cannot be read as results, or None if it can."""
    meta = schema.metadata or {}
    fmt = meta.get(b"verifleet.format", FORMAT_NAME.encode()).decode()
    if fmt != FORMAT_NAME:
        return f"format is {fmt!r}, expected {FORMAT_NAME!r}"
    version = meta.get(b"verifleet.version", b"1").decode()
    if not version.isdigit() or int(version) > FORMAT_VERSION:
        return f"format version {version} is newer than this reader ({FORMAT_VERSION})"
    if "question_id" not in schema.names:
        return "no question_id column: not a verifleet results file"
    return None


def iter_parquet(
    path: PathLike, *, batch_size: int = DEFAULT_BATCH_SIZE
) -> Iterator[VerificationResult]:
    """Stream the results of a Parquet file, ``batch_size`` rows in memory at a time.

    Only the source columns are read; derived summary columns are skipped. Columns
    missing from the file (written before a field existed) take the model default.

    Raises:
        ExportError: at once if the file is missing, not Parquet, not a results file
            or of a newer format version; during iteration if a row does not form a
            valid result (the message gives the row number) or cannot be read.
    """
    return _rows(path, _open(path), batch_size)


def _rows(path: PathLike, parquet: pq.ParquetFile, batch_size: int) -> Iterator[VerificationResult]:
    present = set(parquet.schema_arrow.names)
    columns = [column.name for column in SOURCE_COLUMNS if column.name in present]
    row_number = 0
    with parquet:
        try:
            # One thread: decoding rows into models dominates, and threads would only
            # add per-column read-ahead buffers to the memory a reader holds.
            batches = parquet.iter_batches(
                batch_size=batch_size, columns=columns, use_threads=False
            )
            for batch in batches:
                for row in batch.to_pylist():
                    try:
                        result = row_to_result(row)
                    # ValueError covers corrupt JSON text and ValidationError alike.
                    except ValueError as exc:
                        problem = f"row {row_number} is not a valid result: {exc}"
                        raise export_error(path, problem) from exc
                    yield result
                    row_number += 1
        except (OSError, pa.ArrowException) as exc:
            problem = f"cannot read row {row_number} onwards: {exc}"
            raise export_error(path, problem) from exc


def write_stored_parquet(
    pages: Iterable[Iterable[bytes]],
    path: PathLike,
    *,
    job_id: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    scenario_results: Sequence[ScenarioExecutionResult] | None = None,
    manifest: dict[str, object] | None = None,
) -> int:
    """Write results kept as stored JSON to a Parquet file, page by page.

    The file equals the one :func:`.api.write_results` writes of the validated
    results in the same order (see :meth:`ParquetResultWriter.write_stored`).

    Args:
        pages: Iterables of results' ``model_dump_json()`` texts, e.g. the pages of
            ``ResultStore.iter_stored_batches``; consumed lazily.
        path: Destination; an existing file is replaced on success only.
        job_id: Fills the ``result_key`` column.
        batch_size: Rows per batch and row group.
        scenario_results: Scenario runs kept in the footer.
        manifest: The run manifest kept in the footer.

    Returns:
        The number of results written.

    Raises:
        ExportError: as for :meth:`ParquetResultWriter.write_stored`. Errors raised
            by ``pages`` itself (e.g. Redis unreachable) propagate unchanged. Either
            way ``path`` is left as it was.
    """
    # Three stages on up to three threads: fetching the next page (I/O and zstd),
    # converting this one (the only part that needs the GIL), writing the last one.
    ahead = prefetched(pages)
    with (
        contextlib.closing(ahead),  # stops the fetching thread on an error too
        ParquetResultWriter(path, batch_size=batch_size, job_id=job_id, background=True) as writer,
    ):
        if scenario_results is not None:
            writer.set_scenario_results(scenario_results)
        if manifest is not None:
            writer.set_manifest(manifest)
        for page in ahead:
            for data in page:
                writer.write_stored(data)
        return writer.count
