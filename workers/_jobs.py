"""Per-process cache of job specs: a job's benchmark and config are read from Redis
once per worker process, not once per task."""

from __future__ import annotations

import threading
from collections import OrderedDict

from verifleet.schemas import Benchmark, JobSpec, VerificationConfig
from verifleet.store import ResultStore

__all__ = ["JobCache", "JobSpec"]


class JobCache:
    """A small LRU of parsed job specs, safe for the threads pool."""

    def __init__(self, store: ResultStore, *, size: int = 16) -> None:
        self._store = store
        self._size = size
        self._lock = threading.Lock()
        self._specs: OrderedDict[str, JobSpec] = OrderedDict()

    def get(self, job_id: str) -> JobSpec:
        """The job's spec, loaded and parsed on first use.

        Raises:
            KeyError: the job is not in the store.
        """
        with self._lock:
            spec = self._specs.get(job_id)
            if spec is not None:
                self._specs.move_to_end(job_id)
                return spec
            benchmark_json, config_json = self._store.load_spec(job_id)
            spec = JobSpec(
                benchmark=Benchmark.model_validate_json(benchmark_json),
                config=VerificationConfig.model_validate_json(config_json),
            )
            self._specs[job_id] = spec
            while len(self._specs) > self._size:
                self._specs.popitem(last=False)
            return spec
