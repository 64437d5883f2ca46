"""``Job``: a submitted job from Python — progress, wait, cancel, resume, results."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

from verifleet.results import (
    StoredResults,
    build_manifest,
    resolve_format,
    scenario_errors,
    write_manifest_beside,
    write_results,
    write_stored_parquet,
)
from verifleet.schemas import (
    Benchmark,
    ConfigError,
    ScenarioExecutionResult,
    VerificationConfig,
    VerificationResult,
    VerificationResultSet,
)
from verifleet.store import DEFAULT_QUEUE, Broker, JobProgress, JobStatus, ResultStore

from .submit import resume_job, submit_job

__all__ = ["Job", "redis_url_from"]


def redis_url_from(url: str | None) -> str:
    """``url``, else ``VERIFLEET_REDIS_URL``.

    Raises:
        ConfigError: neither is set.
    """
    resolved = url or os.environ.get("VERIFLEET_REDIS_URL")
    if not resolved:
        raise ConfigError("no Redis URL: pass --redis URL or set VERIFLEET_REDIS_URL")
    return resolved


class Job:
    """A job on the fleet, addressed by id.

    Example:
        >>> import verifleet
        >>> job = verifleet.submit(benchmark, config, "redis://127.0.0.1:6379/0")
        >>> job.wait()
        >>> results = job.result_set()
    """

    def __init__(
        self, job_id: str, redis_url: str | None = None, *, prefix: str | None = None
    ) -> None:
        self.job_id = job_id
        # Set by submit: questions enqueued although their template fails them.
        self.failing_questions: list[str] = []
        self.redis_url = redis_url_from(redis_url)
        self.store = ResultStore.from_url(self.redis_url, prefix=prefix)

    @classmethod
    def submit(
        cls,
        benchmark: Benchmark,
        config: VerificationConfig,
        redis_url: str | None = None,
        *,
        job_id: str | None = None,
        prefix: str | None = None,
        strict: bool = False,
        queue: str = DEFAULT_QUEUE,
        weight: float = 1.0,
        results_to: str | None = None,
    ) -> Job:
        """Validate and enqueue a job (:func:`submit_job`); the arguments are
        :func:`verifleet.submit`'s, which calls this with the benchmark loaded.
        :attr:`failing_questions` lists the questions whose template fails them.

        Raises:
            JobRejectedError: listing every problem; nothing was enqueued.
            ConfigError: no Redis URL.
            redis.RedisError: Redis is unreachable.
        """
        url = redis_url_from(redis_url)
        store = ResultStore.from_url(url, prefix=prefix)
        broker = Broker(url, queue=queue)
        try:
            report = submit_job(
                benchmark,
                config,
                store=store,
                broker=broker,
                job_id=job_id,
                strict=strict,
                weight=weight,
                results_to=results_to,
            )
        finally:
            broker.close()
        job = cls(report.job_id, url, prefix=prefix)
        job.failing_questions = report.failing_questions
        return job

    def progress(self) -> JobProgress:
        """Counts and per-pair verdicts so far.

        Raises:
            KeyError: the job does not exist.
        """
        return self.store.progress(self.job_id)

    def wait(self, timeout: float | None = None, *, poll: float = 1.0) -> JobProgress:
        """Block until the job is done or cancelled.

        Raises:
            TimeoutError: ``timeout`` seconds passed first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            progress = self.progress()
            if progress.finished:
                return progress
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(
                    f"job {self.job_id}: {progress.done_units}/{progress.total_units} units "
                    f"after {timeout}s"
                )
            time.sleep(poll)

    def delete(self) -> None:
        """Remove the job and all its results from Redis (queued units are then
        dropped by the workers: the job is unknown to them)."""
        self.store.delete_job(self.job_id)

    def cancel(self) -> None:
        """Stop new work: queued tasks of this job are dropped by the workers."""
        self.store.set_status(self.job_id, JobStatus.CANCELLED)

    def resume(self, *, retry_errors: bool = False) -> int:
        """Re-enqueue only the units without results; returns how many.

        ``retry_errors`` runs the units with errored results again too (their
        old results are replaced, each result stays stored once).
        """
        broker = Broker(self.redis_url)
        try:
            return resume_job(
                self.job_id, store=self.store, broker=broker, retry_errors=retry_errors
            )
        finally:
            broker.close()

    def iter_results(self) -> Iterator[VerificationResult]:
        """Stream every stored result (bounded memory): those drained to shards
        (``results_to``) and those still in Redis, each once."""
        return StoredResults(self.store, self.job_id).results()

    def scenario_results(self) -> list[ScenarioExecutionResult] | None:
        """Every finished scenario run, None when the job has none."""
        runs = list(self.store.iter_scenario_results(self.job_id))
        return runs or None

    def result_set(self) -> VerificationResultSet:
        """All results as a :class:`VerificationResultSet`, with the scenario runs
        in ``scenario_results`` and the failed ones in ``errors``."""
        runs = self.scenario_results()
        return VerificationResultSet(
            results=list(self.iter_results()), scenario_results=runs, errors=scenario_errors(runs)
        )

    def export(self, path: Path) -> int:
        """Stream the results into ``path`` (format from its extension).

        Parquet and CSV carry each result's key in this job (``result_key``);
        Parquet and JSON also hold the scenario runs.
        Parquet is written from the stored JSON without validating every result
        into a model (several times faster); the file is the same as the one
        :func:`~verifleet.orchestrator.write_results` makes of :meth:`iter_results`.

        Returns:
            The number of results written.

        Raises:
            ExportError: unknown extension, or the file cannot be written, or a
                stored result is invalid; ``path`` is then left as it was.
            redis.RedisError: Redis is unreachable.
        """
        from verifleet.results.stats import label_cells, labels_path, read_label_entries

        runs = self.scenario_results()
        manifest = self.manifest()
        # Labels already beside the file (a job exported again after labelling).
        labels = label_cells(read_label_entries(labels_path(path)))
        if resolve_format(path) == "parquet" and not labels:
            pages = StoredResults(self.store, self.job_id).json_pages()
            count = write_stored_parquet(
                pages, path, job_id=self.job_id, scenario_results=runs, manifest=manifest
            )
        else:
            count = write_results(
                self.iter_results(),
                path,
                job_id=self.job_id,
                scenario_results=runs,
                manifest=manifest,
                labels=labels,
            )
        write_manifest_beside(path, manifest)
        return count

    def manifest(self) -> dict[str, object]:
        """The job's run manifest (benchmark digest, config, models, verifleet's
        version), as ``verifleet run`` writes one. ``host`` is None: the units
        ran on the fleet's workers, not on the machine that asks.

        Raises:
            KeyError: the job is gone from the store.
        """
        benchmark_json, config_json = self.store.load_spec(self.job_id)
        manifest = build_manifest(
            Benchmark.model_validate_json(benchmark_json),
            VerificationConfig.model_validate_json(config_json),
            job_id=self.job_id,
        )
        manifest["host"] = None
        return manifest
