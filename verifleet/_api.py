"""``run`` and ``submit``: verification from Python, in this process or on the fleet.

``run`` is the distributed system's equivalent of the original framework's
``Benchmark.run_verification(config)``: every unit runs here (threads, like
``verifleet run``) and the results come back as one result set. ``submit`` hands
the same job to the fleet and returns its :class:`~verifleet.orchestrator.Job`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from verifleet.orchestrator._fleet.job import Job
    from verifleet.pipeline import PipelineResources
    from verifleet.schemas import Benchmark, VerificationConfig, VerificationResultSet

__all__ = ["run", "submit"]


def _benchmark(benchmark: Any, *, trust_callables: bool) -> Benchmark:
    from verifleet.schemas import Benchmark, load_benchmark

    if isinstance(benchmark, Benchmark):
        return benchmark
    if isinstance(benchmark, str | os.PathLike):
        # Like `verifleet run`: a broken template fails its own question, later.
        return load_benchmark(benchmark, trust_callables=trust_callables, validate_templates=False)
    raise TypeError(f"benchmark must be a Benchmark or a path, not {type(benchmark).__name__}")


def _config(config: Any) -> VerificationConfig:
    from verifleet.schemas import VerificationConfig, unwrap_preset

    if isinstance(config, VerificationConfig):
        return config
    if isinstance(config, Mapping):
        return VerificationConfig.build(**unwrap_preset(dict(config)))
    raise TypeError(
        f"config must be a VerificationConfig or a mapping, not {type(config).__name__}"
    )


def run(
    benchmark: Benchmark | str | os.PathLike[str],
    config: VerificationConfig | Mapping[str, Any],
    *,
    trust_callables: bool = False,
    resources: PipelineResources | None = None,
) -> VerificationResultSet:
    """Verify every (question x answering model x replicate) unit in this process,
    then every (scenario x answering model x replicate) unit, turn by turn.

    Args:
        benchmark: A :class:`~verifleet.schemas.Benchmark`, or the path of a
            benchmark file or checkpoint (loaded as ``verifleet run`` loads it).
        config: The run's :class:`~verifleet.schemas.VerificationConfig`, or its
            fields as a mapping (an original-framework preset works too).
        trust_callables: Allow pickled callable traits when loading from a path.
        resources: Per-process caches to reuse across calls; a fresh set if None.

    Returns:
        One result per unit and parsing model (per turn for scenarios), in the
        order units finish; ``scenario_results`` holds each scenario run and
        ``errors`` the runs that failed. A question whose template does not
        compile, or a model that keeps failing, is recorded in its own results
        (``metadata.error``); it is not raised.

    Raises:
        BenchmarkLoadError: the benchmark file is missing or malformed.
        ConfigError: the config mapping is invalid (every field named).
        UntrustedCodeError: pickled callables without ``trust_callables``.
    """
    from verifleet.orchestrator._local.runner import LocalRunner
    from verifleet.schemas import VerificationResultSet

    loaded = _benchmark(benchmark, trust_callables=trust_callables)
    runner = LocalRunner(loaded, _config(config), resources=resources)
    results = [result for _unit, unit_results in runner.run() for result in unit_results]
    runs = []
    for _scenario, run in runner.run_scenarios():
        results.extend(run.results)
        if run.scenario_result is not None:
            runs.append(run.scenario_result)
    if not runs:
        return VerificationResultSet(results=results)
    failed = [entry for entry in (r.error() for r in runs) if entry is not None]
    return VerificationResultSet(
        results=results,
        scenario_results=runs,
        errors=[(desc, exc) for desc, exc in failed] or None,
    )


def submit(
    benchmark: Benchmark | str | os.PathLike[str],
    config: VerificationConfig | Mapping[str, Any],
    redis_url: str | None = None,
    *,
    trust_callables: bool = False,
    strict: bool = False,
    job_id: str | None = None,
    prefix: str | None = None,
) -> Job:
    """Validate the job and enqueue it on the fleet.

    Args:
        benchmark: As for :func:`run`.
        config: As for :func:`run`.
        redis_url: The fleet's Redis; ``VERIFLEET_REDIS_URL`` when None.
        trust_callables: As for :func:`run`.
        strict: Reject the whole job when any question's template does not
            compile or is refused; by default such a question fails alone (its
            results carry the error) and the others run.
        job_id: A job id of your own (a fresh sortable one by default).
        prefix: Key prefix in Redis (several deployments on one Redis).

    Returns:
        The :class:`~verifleet.orchestrator.Job`; ``.wait()`` then
        ``.result_set()`` gives the results.

    Raises:
        JobRejectedError: listing every problem; nothing was enqueued.
        ConfigError: no Redis URL, or an invalid config mapping.
        redis.RedisError: Redis is unreachable.
    """
    from verifleet.orchestrator._fleet.job import Job

    loaded = _benchmark(benchmark, trust_callables=trust_callables)
    return Job.submit(
        loaded, _config(config), redis_url, job_id=job_id, prefix=prefix, strict=strict
    )
