"""Validating, storing and enqueueing a job."""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime

from pydantic import BaseModel

from verifleet.errors import JobRejectedError
from verifleet.sandbox import default_pool
from verifleet.schemas import (
    Benchmark,
    RubricError,
    ScenarioExecutionResult,
    TemplateValidationError,
    VerificationConfig,
    compute_template_id,
    compute_unit_key,
    md5_hex,
)
from verifleet.store import ResultStore, count_units, unit_messages

from .broker import Broker

__all__ = [
    "JobRejectedError",
    "SubmitReport",
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


def new_job_id() -> str:
    """A sortable, unique job id such as ``20261122-093012-a1b2c3``."""
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def _validate(
    benchmark: Benchmark, descriptions: dict[str, str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """``benchmark.validate()`` without templates, then each template checked in a
    sandbox executor (never compiled in this process; the executors' caches are
    bounded, so a big benchmark costs this process only the descriptions).

    Args:
        descriptions: Filled with each question template's description by
            template id, as JSON text (kept small: a 10,000-question job holds
            them all until it is stored), what the workers then need not ask an
            executor.

    Returns:
        The problems other than templates, and ``{question id: message}`` for
        each question whose template does not compile or is refused.
    """
    problems = list(dict.fromkeys(benchmark.validate(templates=False)))
    templates: dict[str, str] = {}
    pool = default_pool()
    for q in benchmark.questions:
        if not q.has_template:
            continue
        source = q.answer_template or ""
        try:
            pool.validate_template(source, question_id=q.id)
        except TemplateValidationError as exc:
            templates[q.id] = f"question {q.id}: template: {exc.problem}"
        if descriptions is not None:
            # What validating it left in the pool: a description or a refusal.
            template_id = compute_template_id(source)
            described = pool.description(source)
            if described is not None:
                descriptions[template_id] = json.dumps(described)
    for scenario in benchmark.scenarios:
        for node in scenario.nodes:
            if not node.question.has_template:
                continue
            where = f"scenario {scenario.id}, node {node.id}"
            try:
                pool.validate_template(
                    node.question.answer_template or "", question_id=node.question.id
                )
            except TemplateValidationError as exc:
                templates[where] = f"{where}: template: {exc.problem}"
    for broken in benchmark.broken_scenarios:
        # Fails alone like a broken template: its runs record the problem.
        templates[f"scenario {broken.id}"] = broken.message
    return problems, templates


def _job_problems(
    benchmark: Benchmark,
    config: VerificationConfig,
    descriptions: dict[str, str] | None = None,
) -> tuple[list[str], list[str]]:
    """(problems that stop the job, problems that fail one question's template)."""
    problems: list[str] = []
    if not (benchmark.questions or benchmark.scenarios or benchmark.broken_scenarios):
        problems.append("the benchmark has no questions and no scenarios")
    others, templates = _validate(benchmark, descriptions)
    problems.extend(others)
    failing = list(templates.values())
    if config.template_stages_enabled:
        failing.extend(
            f"question {q.id}: evaluation mode '{config.evaluation_mode}' needs an answer template"
            for q in benchmark.questions
            if not q.has_template
        )
        failing.extend(
            f"scenario {s.id}, node {n.id}: evaluation mode '{config.evaluation_mode}' "
            "needs an answer template"
            for s in benchmark.scenarios
            for n in s.nodes
            if not n.question.has_template
        )
    if config.rubric_stages_enabled:
        names: set[str] = set()
        for q in benchmark.questions:
            try:
                rubrics = (benchmark.rubric_for(q), benchmark.dynamic_rubric_for(q))
            except RubricError:
                continue  # already reported by benchmark.validate()
            for rubric in rubrics:
                if rubric is not None:
                    names.update(rubric.get_trait_names())
        if not names:
            problems.append(
                f"evaluation mode '{config.evaluation_mode}' needs rubric traits; the benchmark has none"
            )
        unknown = sorted(set(config.rubric_trait_names or []) - names)
        if unknown:
            problems.append(f"rubric_trait_names: unknown trait(s) {', '.join(unknown)}")
    return problems, failing


def _broken_scenario_runs(
    benchmark: Benchmark, config: VerificationConfig, job_id: str
) -> list[tuple[str, ScenarioExecutionResult]]:
    """(unit key, failed run) of every broken scenario × answering model × replicate."""
    runs = []
    for broken in benchmark.broken_scenarios:
        for answering in config.answering_models:
            identity = answering.identity()
            for replicate in range(1, config.replicate_count + 1):
                key = compute_unit_key(
                    job_id=job_id,
                    question_id=f"scenario:{broken.id}",
                    template_id=md5_hex(broken.problem),
                    answering_key=identity.canonical_key,
                    parsing_key="",
                    replicate=replicate,
                )
                run = broken.failed_run(identity.display_string, replicate, config.run_name)
                runs.append((key, run))
    return runs


def template_problems(benchmark: Benchmark, config: VerificationConfig | None = None) -> list[str]:
    """One message per question whose template will fail it: it does not compile,
    is refused, or (with a ``config`` that runs template stages) is missing.

    Unless a caller asks for strictness these fail their own question only (the
    pipeline records the error in its results); see :func:`validate_job`.
    """
    if config is None:
        return list(_validate(benchmark)[1].values())
    return _job_problems(benchmark, config)[1]


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
    problems, failing = _job_problems(benchmark, config)
    return problems + failing if strict else problems


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
) -> SubmitReport:
    """Validate, store once, and enqueue every unit of a job.

    A question whose template does not compile, is refused or is missing is
    enqueued like the others and fails alone (its results carry the error); the
    report lists them in ``failing_questions``. ``strict=True`` rejects the
    whole job for them instead.

    Raises:
        JobRejectedError: listing every problem; nothing is stored or sent.
        redis.RedisError: the store or broker is unreachable.
    """
    descriptions: dict[str, str] = {}
    problems, failing = _job_problems(benchmark, config, descriptions)
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
    )
    for key, run in broken_runs:
        # Nothing to send: the run of a broken scenario is its failure.
        store.write_scenario_unit(job_id, key, run, [], [])
    sent = broker.send(unit_messages(job_id, benchmark, config), batch_size=batch_size)
    return SubmitReport(
        job_id=job_id,
        units=sent,
        # Scenario turns add results beyond these: how many depends on the paths taken.
        expected_results=len(benchmark.questions)
        * len(config.answering_models)
        * config.replicate_count
        * len(config.parsing_models),
        failing_questions=failing,
    )


def resume_job(
    job_id: str,
    *,
    store: ResultStore,
    broker: Broker,
    batch_size: int = 500,
    retry_errors: bool = False,
) -> int:
    """Re-enqueue only the units of ``job_id`` without results; returns how many.

    With ``retry_errors``, the question units with an errored result lose their
    results first and run again: each result is stored once, the new one.
    (Scenario units are not retried: a scenario run is kept as it ended.)

    Raises:
        KeyError: no such job.
    """
    from verifleet.store import JobStatus, expand_units, unit_key, unit_result_keys

    benchmark_json, config_json = store.load_spec(job_id)
    benchmark = Benchmark.model_validate_json(benchmark_json)
    config = VerificationConfig.model_validate_json(config_json)
    if retry_errors:
        failed = store.failed_units(job_id)
        forgotten: dict[str, list[str]] = {}
        for unit in expand_units(benchmark, config) if failed else ():
            key = unit_key(unit, job_id=job_id)
            if key in failed:
                forgotten[key] = unit_result_keys(unit, config.parsing_models, job_id=job_id)
        store.forget_units(job_id, forgotten)
    done = store.done_units(job_id)
    # Running before sending: workers drop tasks of a cancelled job.
    store.set_status(job_id, JobStatus.RUNNING)
    sent = broker.send(unit_messages(job_id, benchmark, config, skip=done), batch_size=batch_size)
    if sent == 0:
        store.set_status(job_id, JobStatus.DONE)
    return sent
