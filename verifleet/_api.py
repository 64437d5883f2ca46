"""``run`` and ``submit``: verification from Python, in this process or on the fleet.

``run`` is the distributed system's equivalent of the original framework's
``Benchmark.run_verification(config)``: every unit runs here (threads, like
``verifleet run``) and the results come back as one result set. ``submit`` hands
the same job to the fleet and returns its :class:`~verifleet.orchestrator.Job`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from verifleet.orchestrator import Job, LocalRunner
    from verifleet.pipeline import PipelineResources
    from verifleet.schemas import Benchmark, VerificationConfig, VerificationResultSet

__all__ = ["run", "submit"]


def _benchmark(benchmark: object, *, trust_callables: bool) -> Benchmark:
    from verifleet.schemas import Benchmark, load_benchmark

    if isinstance(benchmark, Benchmark):
        return benchmark
    if isinstance(benchmark, str | os.PathLike):
        # Like `verifleet run`: a broken template fails its own question, later.
        return load_benchmark(benchmark, trust_callables=trust_callables, validate_templates=False)
    raise TypeError(f"benchmark must be a Benchmark or a path, not {type(benchmark).__name__}")


_LOCAL = "local"
_MODEL_LISTS = ("answering_models", "parsing_models")


def _models_of(data: Mapping[str, object], local_spec: str | None) -> dict[str, object]:
    """``data`` with model strings (as on the command line) turned into models."""
    from verifleet.schemas import ConfigError, ModelConfig

    out = dict(data)
    for field in _MODEL_LISTS:
        models = out.get(field)
        if isinstance(models, str):
            models = [models]
        if not isinstance(models, list):
            continue
        parsed: list[object] = []
        for model in models:
            if model == _LOCAL:
                if local_spec is None:
                    raise ConfigError(f"{field}: 'local' needs the local model server")
                # A tiny model needs room for structured JSON replies (as in the CLI).
                parsed.append(ModelConfig.parse(local_spec, max_tokens=512))
            elif isinstance(model, str):
                parsed.append(ModelConfig.parse(model))
            else:
                parsed.append(model)
        out[field] = parsed
    return out


def _wants_local(config: object) -> bool:
    if not isinstance(config, Mapping):
        return False
    for field in _MODEL_LISTS:
        models = config.get(field)
        if models == _LOCAL or (isinstance(models, list) and _LOCAL in models):
            return True
    return False


def _config(config: object, *, local_spec: str | None = None) -> VerificationConfig:
    from verifleet.schemas import VerificationConfig, unwrap_preset

    if isinstance(config, VerificationConfig):
        return config
    if isinstance(config, Mapping):
        data = _models_of(unwrap_preset(dict(config)), local_spec)
        return VerificationConfig.build(**data)
    raise TypeError(
        f"config must be a VerificationConfig or a mapping, not {type(config).__name__}"
    )


def _selected(
    benchmark: Benchmark, questions: str | Sequence[str] | None, limit: int | None
) -> Benchmark:
    from verifleet.orchestrator import parse_question_patterns, select_benchmark

    return select_benchmark(benchmark, questions=parse_question_patterns(questions), limit=limit)


#: ``progress(done, total)``: called after each unit finishes (or is found done).
ProgressCallback = Callable[[int, int], None]


def run(
    benchmark: Benchmark | str | os.PathLike[str],
    config: VerificationConfig | Mapping[str, object],
    *,
    trust_callables: bool = False,
    resources: PipelineResources | None = None,
    limit: int | None = None,
    questions: str | Sequence[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    retry_errors: bool = False,
    progress: ProgressCallback | None = None,
    preflight: bool = False,
) -> VerificationResultSet:
    """Verify every (question x answering model x replicate) unit in this process,
    then every (scenario x answering model x replicate) unit, turn by turn.

    Example:
        >>> import verifleet
        >>> results = verifleet.run(
        ...     "examples/demo/benchmark.yaml",
        ...     {"answering_models": ["http://127.0.0.1:8000/v1#my-model"],
        ...      "parsing_models": ["openai:gpt-4.1-mini"]},
        ...     limit=5, out="results.parquet",
        ...     progress=lambda done, total: print(f"{done}/{total}"))

    Args:
        benchmark: A :class:`~verifleet.schemas.Benchmark`, or the path of a
            benchmark file or checkpoint (loaded as ``verifleet run`` loads it).
        config: The run's :class:`~verifleet.schemas.VerificationConfig`, or its
            fields as a mapping (an original-framework preset works too). In a
            mapping, models may be given as on the command line:
            ``"openai:gpt-4.1-mini"``, ``"http://host:8000/v1#name"``,
            ``"manual:answers.jsonl"`` or ``"local"`` (the bundled model, on a
            llama-server started for this call and stopped after it).
        trust_callables: Allow pickled callable traits when loading from a path.
        resources: Per-process caches to reuse across calls; a fresh set if None.
        limit: Run only the first ``limit`` questions (and scenarios).
        questions: Question or scenario ids, shell globs allowed (``"geo-*"``),
            as a list or a comma-separated string.
        out: A result file (``.parquet``, ``.json``, ``.jsonl``, ``.csv``) as with
            ``verifleet run --out``: checked and locked first, every finished unit
            journalled, units already in it skipped (resume), the file written at
            the end; the returned set then holds everything in the file.
        retry_errors: With ``out``: run again the units whose results in it have
            errors (each result stays in the file once).
        progress: Called as ``progress(done, total)`` after each unit (from the
            calling thread).
        preflight: Make one call per model first and raise if one fails.

    Returns:
        One result per unit and parsing model (per turn for scenarios), in the
        order units finish; ``scenario_results`` holds each scenario run and
        ``errors`` the runs that failed. A question whose template does not
        compile, or a model that keeps failing, is recorded in its own results
        (``metadata.error``); it is not raised.

    Raises:
        BenchmarkLoadError: the benchmark file is missing or malformed.
        ConfigError: the config mapping is invalid (every field named), a
            ``questions`` pattern matches nothing, ``limit`` is below 1, or
            ``out`` is in use by another run or cannot be written.
        ExportError: ``out`` has an unknown extension.
        PreflightError: with ``preflight``, a model did not answer.
        UntrustedCodeError: pickled callables without ``trust_callables``.
    """
    from verifleet.orchestrator import LocalRunner

    path = Path(out) if out is not None else None
    with contextlib.ExitStack() as stack:
        if path is not None:
            from verifleet.orchestrator import OutputLock, check_output

            check_output(path)
            stack.enter_context(OutputLock(path))
        loaded = _selected(_benchmark(benchmark, trust_callables=trust_callables), questions, limit)
        local_spec = None
        if _wants_local(config):
            from verifleet.orchestrator import LocalLLMServer

            local_spec = stack.enter_context(LocalLLMServer()).spec
        verification = _config(config, local_spec=local_spec)
        if preflight:
            from verifleet.orchestrator import preflight_models

            preflight_models(verification, resources=resources)
        runner = LocalRunner(loaded, verification, resources=resources)
        return _drive(runner, path, retry_errors=retry_errors, progress=progress)
    raise AssertionError("unreachable: the block returns")


def _drive(
    runner: LocalRunner,
    path: Path | None,
    *,
    retry_errors: bool,
    progress: ProgressCallback | None,
) -> VerificationResultSet:
    """Run ``runner`` through the local driver ``verifleet run`` uses, into
    ``path`` when given (resumed, journalled, finalized); the results are those
    the file holds, from memory."""
    from verifleet.orchestrator import LocalDriver

    driver = LocalDriver(runner, path, retry_errors=retry_errors)
    count = 0

    def tick(*_args: object) -> None:
        nonlocal count
        count += 1
        if progress is not None:
            progress(count, driver.total)

    driver.run(tick, tick, tick)
    return driver.finalize_results()


def submit(
    benchmark: Benchmark | str | os.PathLike[str],
    config: VerificationConfig | Mapping[str, object],
    redis_url: str | None = None,
    *,
    trust_callables: bool = False,
    strict: bool = False,
    job_id: str | None = None,
    prefix: str | None = None,
    queue: str = "verifleet",
    weight: float = 1.0,
    results_to: str | None = None,
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
        job_id: A job id of your own (a fresh sortable one by default):
            letters, digits, ``.``, ``_``, ``-``; an existing job's id is
            refused (``JobRejectedError``).
        prefix: Key prefix in Redis (several deployments on one Redis).
        queue: The queue whose workers run the job (``verifleet worker --queues``).
        weight: The job's share of its queue's workers relative to the other
            jobs in flight (a positive number; default 1).
        results_to: A path every worker sees, or an ``s3://``/``gs://``/``az://``
            URL: the job's finished results leave Redis for Parquet shards
            there as it runs, on workers whose ``--results-root`` holds it
            (other schemes are refused).

    Returns:
        The :class:`~verifleet.orchestrator.Job`; ``.wait()`` then
        ``.result_set()`` gives the results.

    Raises:
        JobRejectedError: listing every problem; nothing was enqueued.
        ConfigError: no Redis URL, or an invalid config mapping.
        redis.RedisError: Redis is unreachable.
    """
    from verifleet.orchestrator import Job

    loaded = _benchmark(benchmark, trust_callables=trust_callables)
    return Job.submit(
        loaded,
        _config(config),
        redis_url,
        job_id=job_id,
        prefix=prefix,
        strict=strict,
        queue=queue,
        weight=weight,
        results_to=results_to,
    )
