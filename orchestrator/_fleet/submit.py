"""Validating, storing and enqueueing a job."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import secrets
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

from verifleet.errors import JobRejectedError
from verifleet.results import location_problem
from verifleet.sandbox import default_pool, sandbox_checker
from verifleet.schemas import (
    Benchmark,
    CallableTrait,
    JobSpec,
    ScenarioExecutionResult,
    TemplateValidationError,
    VerificationConfig,
    check_benchmark,
    compute_template_id,
)
from verifleet.store import (
    Broker,
    ResultStore,
    count_units,
    job_id_problem,
    job_id_taken,
    unit_messages,
)
from verifleet.templates import source_digest

__all__ = [
    "JobCheck",
    "JobRejectedError",
    "SubmitReport",
    "check_job",
    "job_id_refusal",
    "new_job_id",
    "resume_job",
    "submit_job",
    "template_problems",
    "validate_job",
]


class SubmitReport(BaseModel):
    """What :func:`submit_job` did."""

    job_id: str
    units: int
    expected_results: int
    failing_questions: list[str] = []
    """Questions enqueued although their template will fail them (one message each)."""
    templates_checked: int = 0
    """Distinct templates checked before anything was queued."""
    templates_compiled: bool = True
    """Whether they were compiled (``strict``), or only checked statically (parse
    and guard): then one that does not compile fails its own questions on the
    workers, with the error in their results."""


def new_job_id() -> str:
    """A sortable, unique job id such as ``20261122-093012-a1b2c3``."""
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


class _DescribingChecker:
    """The sandbox's checker, answering from descriptions made beforehand.

    :meth:`describe_all` has every distinct template of a benchmark described
    in sandbox executors, as many at once as the pool has executors (never
    compiled in this process); :meth:`check_template` then answers from what
    they said, so a template is compiled once per submission however many
    times it is checked. ``descriptions`` gets each template's description by
    template id, as JSON text (kept small: a 10,000-question job holds them all
    until it is stored), what the workers then need not ask an executor.
    """

    def __init__(self, descriptions: dict[str, str] | None) -> None:
        self.pool = default_pool()
        self._traits = sandbox_checker(self.pool)
        self._descriptions = descriptions
        # What the executors said of each source, by SHA-256 of the source.
        self._said: dict[str, dict[str, object]] = {}

    def describe_all(self, sources: Iterable[str], scope: str) -> int:
        """Describe each distinct source of ``sources`` in ``scope``, in parallel;
        returns how many there were.

        Raises:
            ExecutorCrashed: An executor failed (not a template's code: that is
                the template's problem, kept for :meth:`check_template`).
            SandboxUnavailable: No executor can be started.
        """
        todo = {source_digest(s): s for s in sources if s and s.strip()}

        def describe(source: str) -> dict[str, object]:
            with self.pool.scoped(scope):
                with contextlib.suppress(TemplateValidationError):
                    self.pool.validate_template(source)
                described = self.pool.description(source)
            # None: evicted from the pool's bounded table already (huge
            # benchmarks); check_template then asks an executor again.
            return described if described is not None else {}

        workers = self.pool.settings.pool_size
        with ThreadPoolExecutor(workers, thread_name_prefix="verifleet-check") as threads:
            for digest, said in zip(todo, threads.map(describe, todo.values()), strict=True):
                if said:
                    self._said[digest] = said
        return len(todo)

    def check_template(self, source: str, question_id: str | None) -> None:
        said = self._said.get(source_digest(source))
        if said is None:
            try:
                self.pool.validate_template(source, question_id=question_id)
            finally:
                said = self.pool.description(source)
        if said is not None and self._descriptions is not None:
            self._descriptions[compute_template_id(source)] = json.dumps(said)
        if said is not None and "problem" in said:
            raise TemplateValidationError(str(said["problem"]), question_id=question_id)

    def check_trait(self, trait: CallableTrait) -> None:
        self._traits.check_trait(trait)


class _StaticChecker:
    """A checker that runs only the static checks of templates (parse and
    the guard: none of their code runs), answering from checks made
    beforehand in batches.

    :meth:`check_all` has every distinct source checked, many per round trip,
    as many round trips at once as the pool has executors;
    :meth:`check_template` then answers from what they said. Callable traits
    are loaded in executors as by the full check.
    """

    #: Sources per round trip, and their characters at most: few round trips,
    #: each far below a call's limits.
    BATCH = 256
    BATCH_CHARS = 1 << 20

    def __init__(self) -> None:
        self.pool = default_pool()
        self._traits = sandbox_checker(self.pool)
        # What the checks found in each source (None: nothing), by the source
        # itself: the benchmark's own strings, whose hashes Python keeps (a
        # digest per lookup would cost more than the rest of the host's work).
        self._said: dict[str, str | None] = {}

    def check_all(self, sources: Iterable[str]) -> int:
        """Check each distinct source of ``sources``; returns how many there were.

        Raises:
            ExecutorCrashed: An executor failed (not a template: a source that
                crashes the check is that source's problem).
            SandboxUnavailable: No executor can be started.
        """
        todo = dict.fromkeys(s for s in sources if s and s.strip())
        batches: list[list[str]] = [[]]
        chars = 0
        for source in todo:
            if batches[-1] and (len(batches[-1]) >= self.BATCH or chars >= self.BATCH_CHARS):
                batches.append([])
                chars = 0
            batches[-1].append(source)
            chars += len(source)
        workers = self.pool.settings.pool_size
        with ThreadPoolExecutor(workers, thread_name_prefix="verifleet-check") as threads:
            found = threads.map(self.pool.static_problems, batches)
            for batch, problems in zip(batches, found, strict=True):
                self._said.update(zip(batch, problems, strict=True))
        return len(todo)

    def check_template(self, source: str, question_id: str | None) -> None:
        if source not in self._said:
            [self._said[source]] = self.pool.static_problems([source])
        problem = self._said[source]
        if problem is not None:
            raise TemplateValidationError(problem, question_id=question_id)

    def check_trait(self, trait: CallableTrait) -> None:
        self._traits.check_trait(trait)


@dataclass
class JobCheck:
    """What checking a job found: problems that stop it, problems that fail
    their own question or scenario, and each template's description by
    template id (JSON text) for its workers (none when ``compiled`` is False:
    the templates were only checked statically, and each worker describes a
    template as it compiles it for its first unit). ``templates`` is how many
    distinct templates were checked."""

    problems: list[str]
    failing: list[str]
    descriptions: dict[str, str] = field(default_factory=dict)
    compiled: bool = True
    templates: int = 0


def _sources(benchmark: Benchmark) -> Iterator[str]:
    for question in benchmark.questions:
        yield question.answer_template or ""
    for scenario in benchmark.scenarios:
        for node in scenario.nodes:
            yield node.question.answer_template or ""


def check_job(
    benchmark: Benchmark, config: VerificationConfig | None, *, compile_templates: bool = True
) -> JobCheck:
    """Check a job once: every template described once, in parallel over the
    sandbox's executors, then :func:`check_benchmark`'s rules and words (as
    ``Benchmark.validate``, ``load_benchmark``, ``run`` and ``serve``); with
    no ``config``, only the benchmark's own problems.

    With ``compile_templates=False`` each template gets the static checks alone (it
    parses, and the guard refuses nothing: :meth:`SandboxPool.static_problems`,
    in batches, in parallel), in the same words; one that passes them but
    does not compile is not found here: its workers compile it for its first
    unit, and its questions fail alone with the error then. What a submission
    compiled, its workers would compile again anyway (they run the code),
    so ``submit`` leaves the compile to them unless it is strict.

    Raises:
        ExecutorCrashed: A sandbox executor failed.
        SandboxUnavailable: No executor can be started.
    """
    if not compile_templates:
        static = _StaticChecker()
        templates = static.check_all(_sources(benchmark))
        found = check_benchmark(benchmark, checker=static, config=config)
        return JobCheck(
            found.messages(alone=False),
            found.messages(alone=True),
            compiled=False,
            templates=templates,
        )
    descriptions: dict[str, str] = {}
    checker = _DescribingChecker(descriptions)
    # The job's templates are described side by side in one template process
    # per executor, as its workers run them: outside a scope each would get a
    # process of its own (a fork and a compile each). What is described in this scope
    # serves submissions of this very benchmark alone (its own code made it;
    # stored with a job, it serves that job alone).
    content = hashlib.sha256(benchmark.model_dump_json().encode()).hexdigest()
    templates = checker.describe_all(_sources(benchmark), f"submit-{content[:32]}")
    found = check_benchmark(benchmark, checker=checker, config=config)
    return JobCheck(
        found.messages(alone=False), found.messages(alone=True), descriptions, templates=templates
    )


def _broken_scenario_runs(
    benchmark: Benchmark, config: VerificationConfig, job_id: str
) -> list[tuple[str, ScenarioExecutionResult]]:
    """(unit key, failed run) of every broken scenario × answering model × replicate."""
    runs = []
    for broken in benchmark.broken_scenarios:
        for answering in config.answering_models:
            identity = answering.identity()
            for replicate in range(1, config.replicate_count + 1):
                key = broken.unit_key(identity, replicate, job_id=job_id)
                run = broken.failed_run(identity, replicate, config.run_name)
                runs.append((key, run))
    return runs


def template_problems(benchmark: Benchmark, config: VerificationConfig | None = None) -> list[str]:
    """One message per question or scenario that will fail alone: its template
    does not compile, is refused, or (with a ``config`` that runs template stages)
    is missing; a scenario failed validation.

    Unless a caller asks for strictness these fail their own question or scenario
    only (the results record the error); see :func:`validate_job`.
    """
    return check_job(benchmark, config).failing


def validate_job(
    benchmark: Benchmark, config: VerificationConfig, *, strict: bool = True
) -> list[str]:
    """Every reason the job cannot run, as messages (empty: ready).

    Checks each template compiles (template modes), each question's rubrics merge,
    that rubric modes have traits to evaluate and that ``rubric_trait_names``
    resolve. With ``strict=False`` a question whose template does not compile,
    is refused or is missing is not a reason: that question fails alone when it
    runs (:func:`template_problems` lists them), as ``verifleet run`` does.
    """
    checked = check_job(benchmark, config)
    return checked.problems + checked.failing if strict else checked.problems


def _job_problems(
    benchmark: Benchmark,
    config: VerificationConfig,
    descriptions: dict[str, str] | None = None,
) -> tuple[list[str], list[str]]:
    """(problems that stop the job, problems that fail alone) of
    :func:`check_job`; ``descriptions`` gets its descriptions."""
    checked = check_job(benchmark, config)
    if descriptions is not None:
        descriptions.update(checked.descriptions)
    return checked.problems, checked.failing


def submit_job(
    benchmark: Benchmark,
    config: VerificationConfig,
    *,
    store: ResultStore,
    broker: Broker,
    job_id: str | None = None,
    name: str = "",
    batch_size: int = 500,
    strict: bool = False,
    weight: float = 1.0,
    results_to: str | None = None,
    checked: JobCheck | None = None,
) -> SubmitReport:
    """Validate, store once, and enqueue every unit of a job.

    The job goes into the schedule of the broker's queue: the workers of that
    queue send its units as they have room, sharing their slots between the
    jobs in flight in proportion to ``weight`` (see
    :class:`~verifleet.store.Schedule`); no message is sent here, so a job of a
    million units is submitted as fast as one of ten.

    Each distinct template is checked statically (it parses and the guard
    refuses nothing), in batches over the sandbox's executors; none is compiled
    here: the workers compile each for its first unit (as they would anyway).
    A question whose template fails the static checks or is missing is
    enqueued like the others and fails alone (its results carry the error); the
    report lists them in ``failing_questions``. One that passes them but does
    not compile fails alone too, on the workers, with the error in its results
    (the same words), and is not in that list. ``strict=True`` compiles every
    template first and rejects the whole job for any of these instead.

    With ``results_to`` (a local or shared path, or an fsspec URL such as
    ``s3://bucket/prefix``) the workers move the job's finished results out of
    Redis into Parquet shards under ``results_to/<job id>/`` while it runs
    (:class:`~verifleet.store.ResultDrain`); every reader of the job's results
    reads the shards and what Redis still holds. A local path is made absolute:
    every worker must see it at the same place (a shared file system).

    ``job_id`` (default: generated) must be well formed
    (:func:`~verifleet.store.job_id_problem`) and not held by an existing job.
    ``checked`` is :func:`check_job` of this very benchmark and config, when
    the caller checked it already (each template is then not checked again;
    with ``strict``, a check that did not compile them is made again, compiling).

    Raises:
        JobRejectedError: listing every problem (a malformed or taken job id, a
            weight that is not a positive number, a results location on a scheme
            off the allow-list or that cannot be written, among them); nothing
            is stored or sent.
        redis.RedisError: the store or broker is unreachable.
    """
    if job_id is not None:
        # Before the templates are checked: a malformed or taken id is refused at once.
        problem = job_id_refusal(store, job_id)
        if problem:
            raise JobRejectedError([problem])
    if checked is None or (strict and not checked.compiled):
        checked = check_job(benchmark, config, compile_templates=strict)
    descriptions = checked.descriptions
    problems, failing = list(checked.problems), list(checked.failing)
    if not (math.isfinite(weight) and weight > 0):
        problems.append(f"weight: must be a positive number, got {weight}")
    if results_to is not None:
        results_to, problem = _results_location(results_to)
        if problem:
            problems.append(problem)
    if strict:
        problems, failing = problems + failing, []
    if problems:
        raise JobRejectedError(problems)
    job_id = job_id or new_job_id()
    broken_runs = _broken_scenario_runs(benchmark, config, job_id)
    units = count_units(benchmark, config) + len(broken_runs)
    store.create_job(
        job_id,
        benchmark_json=benchmark.model_dump_json(),
        config_json=config.model_dump_json(),
        total_units=units,
        name=name or benchmark.name,
        total_scenarios=(len(benchmark.scenarios) + len(benchmark.broken_scenarios))
        * len(config.answering_models)
        * config.replicate_count,
        # Each template described once for the fleet: workers take these up
        # with the unit instead of asking an executor (they still compile it).
        templates=descriptions,
        queue=broker.queue,
        weight=weight,
        scheduled=True,
        sendable=count_units(benchmark, config),
        results_to=results_to,
    )
    for key, run in broken_runs:
        # Nothing to send: the run of a broken scenario is its failure.
        store.write_scenario_unit(job_id, key, run, [], [])
    return SubmitReport(
        job_id=job_id,
        units=units,
        # Scenario turns add results beyond these: how many depends on the paths taken.
        expected_results=len(benchmark.questions)
        * len(config.answering_models)
        * config.replicate_count
        * len(config.parsing_models),
        failing_questions=failing,
        templates_checked=checked.templates,
        templates_compiled=checked.compiled,
    )


def job_id_refusal(store: ResultStore, job_id: str) -> str | None:
    """Why ``job_id`` cannot be given to a new job (malformed, or an existing
    job holds it), or None. The store claims the id atomically again when the
    job is created, so two racing submissions cannot both get it.

    Raises:
        redis.RedisError: the store is unreachable.
    """
    problem = job_id_problem(job_id)
    if problem is None and store.exists(job_id):
        problem = job_id_taken(job_id)
    return problem


def _results_location(url: str) -> tuple[str, str | None]:
    """The results location as workers will use it (a local path made absolute)
    and the problem with it, if any: a scheme off the allow-list (refused from
    the URL's text, before anything connects), or a folder that cannot be
    created here. Whether a worker writes there is its operator's choice
    (``verifleet worker --results-root``)."""
    problem = location_problem(url)
    if problem:
        return url, problem
    if "://" not in url:
        url = str(Path(url).expanduser().resolve())
    try:
        import fsspec

        fs, root = fsspec.core.url_to_fs(url)
        if getattr(fs, "protocol", None) in ("file", ("file", "local")):
            fs.makedirs(root, exist_ok=True)
    except (ImportError, ValueError, OSError) as exc:
        return url, f"results_to: {url!r} cannot be used: {exc}"
    return url, None


def resume_job(
    job_id: str,
    *,
    store: ResultStore,
    broker: Broker,
    batch_size: int = 500,
    retry_errors: bool = False,
) -> int:
    """Re-enqueue only the units of ``job_id`` without results; returns how many
    were sent now. A scheduled job's units not given out yet go back to its
    schedule instead (they count in the return value too), so a resumed job
    still shares the fleet by weight.

    With ``retry_errors``, the question units with an errored result lose their
    results first and run again: each result is stored once, the new one.
    (Scenario units are not retried: a scenario run is kept as it ended.)

    Raises:
        KeyError: no such job.
    """
    from verifleet.store import JobStatus

    benchmark_json, config_json = store.load_spec(job_id)
    benchmark = Benchmark.model_validate_json(benchmark_json)
    config = VerificationConfig.model_validate_json(config_json)
    if retry_errors:
        failed = store.failed_units(job_id)
        forgotten: dict[str, list[str]] = {}
        spec = JobSpec(benchmark, config)
        for unit in spec.units() if failed else ():
            key = unit.key(job_id)
            if key in failed:
                forgotten[key] = spec.result_keys(unit, job_id)
        store.forget_units(job_id, forgotten)
    done = store.done_units(job_id)
    # Running before sending: workers drop tasks of a cancelled job.
    store.set_status(job_id, JobStatus.RUNNING)
    given_out, queue = store.given_out(job_id)
    messages = unit_messages(job_id, benchmark, config, skip=done, stop=given_out)
    sent = broker.send(messages, batch_size=batch_size, queue=queue)
    waiting = 0
    if given_out is not None:
        waiting = count_units(benchmark, config) - given_out
        if waiting > 0:
            store.schedule.enroll(job_id, queue)
    if sent + waiting == 0:
        store.set_status(job_id, JobStatus.DONE)
    return sent + waiting
