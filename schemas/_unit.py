"""The unit of work and the one function that names its results.

A unit is one (question, answering model, replicate) of a job. The local runner,
the Celery workers and the reward scorer all build a :class:`Unit` from a
:class:`JobSpec` and hand both to ``verifleet.pipeline.run_unit``; every key a
result is stored, resumed or exported under comes from :class:`ResultIdentity`,
whether it is computed before the unit runs (from the unit) or after (from the
result's metadata). Both sides take the template id the results carry, which is
``"no_template"`` in ``rubric_only`` mode: deriving it once from the question and
once from the metadata made local resume and the exported ``result_key`` column
disagree with the stored keys in that mode.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from verifleet.templates import NO_TEMPLATE_ID

from ._identity import compute_unit_key, md5_hex

if TYPE_CHECKING:
    from ._benchmark import Benchmark, Question
    from ._config import ModelConfig, VerificationConfig
    from ._identity import ModelIdentity
    from ._results import VerificationResult
    from ._scenario import BrokenScenario, ScenarioDefinition

__all__ = [
    "JobSpec",
    "ResultIdentity",
    "ScenarioUnit",
    "Unit",
    "result_template_id",
    "scenario_key",
]


def result_template_id(question: Question, config: VerificationConfig) -> str:
    """The template id ``question``'s results carry under ``config``: the
    question's own, or ``"no_template"`` when the config runs no template stage
    (``rubric_only``) or the question has no template."""
    return question.template_id if config.template_stages_enabled else NO_TEMPLATE_ID


class ResultIdentity(NamedTuple):
    """What names one result: everything but the job, which :meth:`key` adds."""

    question_id: str
    template_id: str
    answering_key: str
    parsing_key: str
    replicate: int | None

    def key(self, job_id: str = "") -> str:
        """The deterministic key of the result in ``job_id`` (24 hex characters).
        With no parsing key it names the unit itself."""
        return compute_unit_key(
            job_id=job_id,
            question_id=self.question_id,
            template_id=self.template_id,
            answering_key=self.answering_key,
            parsing_key=self.parsing_key,
            replicate=self.replicate,
        )

    @classmethod
    def of_result(
        cls, result: VerificationResult, *, question_id: str | None = None
    ) -> ResultIdentity:
        """The identity a finished result carries in its metadata.

        Args:
            question_id: The id to key by instead of ``metadata.question_id``
                (a scenario turn keys by scenario, turn and node).
        """
        meta = result.metadata
        return cls(
            question_id=meta.question_id if question_id is None else question_id,
            template_id=meta.template_id,
            answering_key=meta.answering.canonical_key,
            parsing_key=meta.parsing.canonical_key,
            replicate=meta.replicate,
        )


@dataclass(frozen=True)
class Unit:
    """One (question, answering model, replicate): generates one answer, judged by
    every parsing model of the job. Build it with :meth:`JobSpec.unit` or
    :meth:`JobSpec.units`, which fill ``template_id`` from the config.

    Attributes:
        question: The question.
        answering: The answering model.
        replicate: The replicate number (None for a one-off, e.g. a reward request).
        template_id: The template id its results carry (see
            :func:`result_template_id`); None takes the question's, which is
            right only in the modes that run template stages.
    """

    question: Question
    answering: ModelConfig
    replicate: int | None
    template_id: str | None = None

    def identity(self, parsing: ModelConfig | None = None) -> ResultIdentity:
        """The identity of the result judged by ``parsing`` (None: the unit's own)."""
        return ResultIdentity(
            question_id=self.question.id,
            template_id=self.question.template_id if self.template_id is None else self.template_id,
            answering_key=self.answering.identity().canonical_key,
            parsing_key="" if parsing is None else parsing.identity(role="parsing").canonical_key,
            replicate=self.replicate,
        )

    def key(self, job_id: str = "") -> str:
        """The deterministic key of the unit (its results' keys with no parsing model)."""
        return self.identity().key(job_id)

    def result_keys(self, parsing_models: Sequence[ModelConfig], job_id: str = "") -> list[str]:
        """The keys of the results the unit produces, one per parsing model."""
        return [self.identity(parsing).key(job_id) for parsing in parsing_models]


def scenario_key(
    scenario: ScenarioDefinition | BrokenScenario,
    answering: ModelIdentity,
    replicate: int | None,
    *,
    job_id: str = "",
) -> str:
    """The deterministic key of one scenario unit: the scenario's id and a digest of
    its definition (of a broken scenario, of its problem), the answering model and
    the replicate. The one key of a scenario unit: the fleet stores its run under
    it (with the job id), and every run records it without a job
    (``ScenarioExecutionResult.unit_key``), which a local resume and a
    re-verification compare, so a changed scenario is a different unit and runs
    again in every mode.
    """
    from ._scenario import BrokenScenario  # the scenario models load after the units

    if isinstance(scenario, BrokenScenario):
        version = md5_hex(scenario.problem)
    else:
        version = md5_hex(scenario.model_dump_json())
    return compute_unit_key(
        job_id=job_id,
        question_id=f"scenario:{scenario.id}",
        template_id=version,  # stands in for a template id
        answering_key=answering.canonical_key,
        parsing_key="",
        replicate=replicate,
    )


@dataclass(frozen=True)
class ScenarioUnit:
    """One (scenario, answering model, replicate): all its turns run in one task."""

    scenario: ScenarioDefinition
    answering: ModelConfig
    replicate: int

    def key(self, job_id: str = "") -> str:
        """The unit's :func:`scenario_key` in ``job_id`` (none: the key its run records)."""
        return scenario_key(self.scenario, self.answering.identity(), self.replicate, job_id=job_id)


@dataclass(frozen=True)
class JobSpec:
    """A job's benchmark and config: what every unit of it is run against."""

    benchmark: Benchmark
    config: VerificationConfig

    def unit(self, question: Question, answering: ModelConfig, replicate: int | None) -> Unit:
        """The unit of ``question`` × ``answering`` × ``replicate`` in this job."""
        return Unit(question, answering, replicate, result_template_id(question, self.config))

    def unit_at(self, question_index: int, answering_index: int, replicate: int) -> Unit:
        """The unit a task message names by position.

        Raises:
            IndexError: a position outside the benchmark or the config.
        """
        return self.unit(
            self.benchmark.questions[question_index],
            self.config.answering_models[answering_index],
            replicate,
        )

    def scenario_unit_at(
        self, scenario_index: int, answering_index: int, replicate: int
    ) -> ScenarioUnit:
        """The scenario unit a task message names by position.

        Raises:
            IndexError: a position outside the benchmark or the config.
        """
        return ScenarioUnit(
            self.benchmark.scenarios[scenario_index],
            self.config.answering_models[answering_index],
            replicate,
        )

    def scenario_units(self) -> Iterator[ScenarioUnit]:
        """Every scenario unit of the job, scenario-major."""
        for scenario in self.benchmark.scenarios:
            for answering in self.config.answering_models:
                for replicate in range(1, self.config.replicate_count + 1):
                    yield ScenarioUnit(scenario, answering, replicate)

    def units(self) -> Iterator[Unit]:
        """Every question unit of the job lazily, question-major (a job of a
        million units never exists as a list)."""
        for question in self.benchmark.questions:
            for answering in self.config.answering_models:
                for replicate in range(1, self.config.replicate_count + 1):
                    yield self.unit(question, answering, replicate)

    def result_keys(self, unit: Unit, job_id: str = "") -> list[str]:
        """The keys of ``unit``'s results, one per parsing model of the job."""
        return unit.result_keys(self.config.parsing_models, job_id)
