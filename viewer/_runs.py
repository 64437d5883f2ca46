"""Runs the viewer shows: a result file, or a fleet job read live from Redis."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from verifleet.results import (
    StoredResults,
    iter_results,
    read_parquet_rows,
    read_scenario_results,
    resolve_format,
)
from verifleet.schemas import (
    Benchmark,
    ExportError,
    ScenarioExecutionResult,
    VerificationResult,
)
from verifleet.store import ResultStore

from ._errors import ViewerError
from ._index import ResultIndex
from ._parquet_index import parquet_rows
from ._templates import TemplateSources, template_sources

__all__ = ["FileRun", "JobRun", "Run"]

# Results fetched from Redis per HMGET while catching up with a job.
_FETCH_BATCH = 500


class Run:
    """One set of results: a name, its summary index, and its full results on demand.

    Subclasses load the index and say how to fetch one full result.
    """

    live: bool = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.index = ResultIndex()
        #: The answer templates' sources its result pages show.
        self.templates = TemplateSources()

    def result(self, row: int) -> VerificationResult:
        """The full result at ``row``.

        Raises:
            ViewerError: there is no such row (or it can no longer be read).
        """
        raise NotImplementedError

    def iter_full(self) -> Iterator[VerificationResult]:
        """Every full result in row order (what a report embeds)."""
        for row in range(len(self.index)):
            yield self.result(row)

    def scenarios(self) -> list[ScenarioExecutionResult]:
        """The run's scenario runs (none by default)."""
        return []

    def refresh(self) -> int:
        """Pick up results that arrived since the last call; the number added.

        A file never changes under the viewer, so the default adds nothing.
        """
        return 0

    def progress(self) -> dict[str, object] | None:
        """Job progress for live pages; None for a finished file."""
        return None

    def info(self) -> dict[str, object]:
        """What the page header says about the run: where it comes from and when,
        the models, the run names and the dates of its results, the verifleet
        version showing it, and (for a job) its configuration."""
        frame = self.index.frame
        stamps = sorted(t for t in frame["timestamp"].dropna().astype(str) if t)
        names = sorted(n for n in frame["run_name"].dropna().astype(str).unique() if n)
        facets = self.index.facets()
        return {
            "name": self.name,
            "results": len(self.index),
            "answering": facets["answering"],
            "parsing": facets["parsing"],
            "run_names": names,
            "first_result": stamps[0] if stamps else None,
            "last_result": stamps[-1] if stamps else None,
            "viewer_version": _version(),
            **self._source(),
        }

    def _source(self) -> dict[str, object]:
        return {"source": "results", "location": self.name}

    def _check_row(self, row: int) -> None:
        if not 0 <= row < len(self.index):
            raise ViewerError(f"run {self.name!r} has no result {row} ({len(self.index)} results)")


class FileRun(Run):
    """The results of a Parquet, JSON, JSON Lines or CSV file.

    A Parquet file is indexed from its summary columns (no result is built) and a
    full result is re-read from the file when a page asks for it (only its row
    group is read); other formats keep their results in memory, as they cannot be
    read by position.

    Raises:
        ExportError: the file is missing, of an unknown format, or invalid.
    """

    def __init__(self, path: Path, name: str | None = None) -> None:
        super().__init__(name or path.name)
        self.path = path
        self.format = resolve_format(path)
        self._kept: list[VerificationResult] | None = None
        if self.format == "parquet":
            read_parquet_rows(path, [])  # fails at once on a missing or foreign file
            try:
                found = parquet_rows(path)
            except (OSError, pa.ArrowException, ValueError) as exc:
                raise ExportError(f"{path}: cannot index the file: {exc}") from exc
            if found is None:  # no summary columns: index it result by result
                self.index.add(iter_results(path))
            else:
                self.index.add_rows(*found)
        else:
            self._kept = list(iter_results(path))
            self.index.add(self._kept)

    def scenarios(self) -> list[ScenarioExecutionResult]:
        """The scenario runs the file holds (Parquet footer, JSON document).

        Raises:
            ExportError: they are stored but invalid.
        """
        return read_scenario_results(self.path) or []

    def iter_full(self) -> Iterator[VerificationResult]:
        """Every full result in row order, read in one pass over the file."""
        if self._kept is not None:
            yield from self._kept
            return
        for row, result in enumerate(iter_results(self.path)):
            if row >= len(self.index):
                return
            yield result

    def _source(self) -> dict[str, object]:
        stat = self.path.stat()
        modified = datetime.fromtimestamp(stat.st_mtime, UTC).isoformat(timespec="seconds")
        return {
            "source": "file",
            "location": str(self.path.resolve()),
            "format": self.format,
            "modified": modified,
            "size_bytes": stat.st_size,
        }

    def result(self, row: int) -> VerificationResult:
        """The full result at ``row``, read again from a Parquet file."""
        self._check_row(row)
        if self._kept is not None:
            return self._kept[row]
        return read_parquet_rows(self.path, [row])[0]


class JobRun(Run):
    """A fleet job's results as they arrive in Redis.

    The index holds the results stored when it last refreshed; :meth:`refresh`
    asks Redis for the result keys and fetches only the new ones. Full results are
    read from Redis by key on demand.

    Raises:
        ViewerError: the job does not exist in the store.
        redis.RedisError: Redis is unreachable.
    """

    live = True

    def __init__(self, store: ResultStore, job_id: str, *, min_interval: float = 1.0) -> None:
        super().__init__(f"job {job_id}")
        self.store = store
        self.job_id = job_id
        self.templates = TemplateSources(self._job_templates)
        # Redis and, for a job with --results-to, the shards its results went to.
        self._stored = StoredResults(store, job_id)
        self.min_interval = min_interval
        self._keys: list[str] = []
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self._last = 0.0
        # (monotonic time, result count) samples of the last minute, for the rate.
        self._samples: deque[tuple[float, int]] = deque()
        try:
            store.progress(job_id)
        except KeyError:
            raise ViewerError(f"no job {job_id!r} in the store (see `verifleet jobs`)") from None
        self.refresh(force=True)

    def scenarios(self) -> list[ScenarioExecutionResult]:
        """The job's scenario runs stored so far."""
        return list(self.store.iter_scenario_results(self.job_id))

    def refresh(self, force: bool = False) -> int:
        """Fetch results stored since the last refresh (at most once per
        ``min_interval`` seconds unless ``force``); the number added."""
        with self._lock:
            now = time.monotonic()
            if not force and now - self._last < self.min_interval:
                return 0
            self._last = now
            # The count first: listing every key of a large job on each poll is
            # wasted when nothing arrived (results are written once; drained ones
            # still count).
            stored = self.store.result_count(self.job_id)
            if stored == len(self._keys) and not force:
                self._sample(now)
                return 0
            fresh = [k for k in self._stored.result_keys() if k not in self._seen]
            added = 0
            for start in range(0, len(fresh), _FETCH_BATCH):
                keys = fresh[start : start + _FETCH_BATCH]
                pairs = [
                    (k, r)
                    for k, r in zip(keys, self._stored.get(keys), strict=True)
                    if r is not None
                ]
                self.index.add((r for _, r in pairs), start=len(self._keys))
                for key, _ in pairs:
                    self._keys.append(key)
                    self._seen.add(key)
                added += len(pairs)
            self._sample(now)
            return added

    def _sample(self, now: float) -> None:
        self._samples.append((now, len(self._keys)))
        while self._samples and now - self._samples[0][0] > 60:
            self._samples.popleft()

    def iter_full(self) -> Iterator[VerificationResult]:
        """Every indexed full result in row order, fetched from Redis in batches."""
        keys = list(self._keys)
        for start in range(0, len(keys), _FETCH_BATCH):
            for found in self.store.get_results(self.job_id, keys[start : start + _FETCH_BATCH]):
                if found is not None:
                    yield found

    def result(self, row: int) -> VerificationResult:
        """The full result at ``row``, read from Redis."""
        self._check_row(row)
        found = self._stored.get([self._keys[row]])[0]
        if found is None:
            raise ViewerError(f"result {row} of job {self.job_id} is gone from the store")
        return found

    def _job_templates(self) -> tuple[dict[str, str], str]:
        benchmark_json, _config = self.store.load_spec(self.job_id)
        sources = template_sources(Benchmark.model_validate_json(benchmark_json))
        return sources, f"the benchmark of job {self.job_id}"

    def _source(self) -> dict[str, object]:
        progress = self.store.progress(self.job_id)
        try:
            _benchmark, config_json = self.store.load_spec(self.job_id)
            config = _config_summary(json.loads(config_json))
        except KeyError:
            config = None
        return {
            "source": "job",
            "location": self.job_id,
            "job_name": progress.name,
            "status": progress.status.value,
            "created": progress.created,
            "config": config,
        }

    def progress(self) -> dict[str, object]:
        """The job's counts, status and result rate over the last minute."""
        progress = self.store.progress(self.job_id)
        rate = 0.0
        if len(self._samples) >= 2:
            (t0, n0), (t1, n1) = self._samples[0], self._samples[-1]
            rate = (n1 - n0) / (t1 - t0) if t1 > t0 else 0.0
        return {
            "job_id": self.job_id,
            "name": progress.name,
            "status": progress.status.value,
            "finished": progress.finished,
            "total_units": progress.total_units,
            "done_units": progress.done_units,
            "failed_units": progress.failed_units,
            "in_flight": progress.in_flight,
            "results": progress.results,
            "indexed": len(self._keys),
            "rate": rate,
        }


# Config fields the header leaves out: the models (shown on their own) and bulky
# or internal settings.
_CONFIG_HIDDEN = frozenset({"answering_models", "parsing_models", "retry_policy"})


def _config_summary(config: dict[str, object]) -> dict[str, object]:
    """A job config's settings that are on, set or non-empty (False, None, empty
    lists and maps are left out: they are the defaults and say nothing)."""
    return {
        key: value
        for key, value in sorted(config.items())
        if key not in _CONFIG_HIDDEN and value not in (None, False, [], {}, "")
    }


def _version() -> str:
    """verifleet's installed version (read from the package metadata: importing the
    top-level package would pull the API's layers into the viewer's)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("verifleet")
    except PackageNotFoundError:
        return "unknown"
