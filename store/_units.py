"""Expanding a job into units and naming units and results deterministically."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from verifleet.schemas import (
    JobSpec,
    ResultIdentity,
    ScenarioUnit,
    Unit,
    VerificationConfig,
)

from ._protocol import UnitRef

if TYPE_CHECKING:
    from verifleet.schemas import Benchmark, VerificationResult

__all__ = [
    "ScenarioUnit",
    "Unit",
    "count_units",
    "expand_scenario_units",
    "expand_units",
    "keyed_question_id",
    "result_key",
    "scenario_result_keys",
    "unit_messages",
]


def count_units(benchmark: Benchmark, config: VerificationConfig) -> int:
    """How many units a job has: questions and scenarios, × models × replicates."""
    per_item = len(config.answering_models) * config.replicate_count
    return (len(benchmark.questions) + len(benchmark.scenarios)) * per_item


def expand_scenario_units(
    benchmark: Benchmark, config: VerificationConfig
) -> Iterator[ScenarioUnit]:
    """Every scenario unit of the job, scenario-major."""
    return JobSpec(benchmark, config).scenario_units()


def keyed_question_id(
    question_id: str, scenario_id: str | None, turn: int | None, node: str | None
) -> str:
    """The question id a result's key is computed from: the question's own, or for
    a scenario turn one naming the scenario, the turn and the node (a node visited
    twice gives two keys)."""
    if scenario_id is None:
        return question_id
    return f"scenario:{scenario_id}/{turn}/{node}"


def _turn_key(result: VerificationResult, job_id: str) -> str:
    meta = result.metadata
    question_id = keyed_question_id(
        meta.question_id, meta.scenario_id, meta.scenario_turn, meta.scenario_node
    )
    return ResultIdentity.of_result(result, question_id=question_id).key(job_id)


def scenario_result_keys(results: Sequence[VerificationResult], *, job_id: str = "") -> list[str]:
    """The keys of a scenario run's turn results: scenario, turn, node, models and
    replicate, so a node visited twice gives two keys and a rerun the same ones."""
    return [_turn_key(r, job_id) for r in results]


def expand_units(benchmark: Benchmark, config: VerificationConfig) -> Iterator[Unit]:
    """Yield every unit of the job lazily, question-major (a job of a million units
    never exists as a list)."""
    return JobSpec(benchmark, config).units()


def result_key(result: VerificationResult, *, job_id: str = "") -> str:
    """The deterministic key of a finished result: :meth:`Unit.result_keys` of its
    unit (both go through :class:`~verifleet.schemas.ResultIdentity`), or
    :func:`scenario_result_keys` for a scenario turn's result."""
    if result.metadata.scenario_id is not None:
        return _turn_key(result, job_id)
    return ResultIdentity.of_result(result).key(job_id)


def unit_messages(
    job_id: str,
    benchmark: Benchmark,
    config: VerificationConfig,
    skip: set[str] | None = None,
    *,
    stop: int | None = None,
) -> Iterator[tuple[UnitRef, dict[str, str]]]:
    """The task of every unit of a job, in submit order (questions, then
    scenarios), lazily: its reference and the labels that name it in Flower.

    Args:
        skip: Unit keys (:meth:`Unit.key` with ``job_id``) to leave out, e.g. the
            units already done when a job is resumed.
        stop: Only the units before this position (the units a schedule has
            given out so far); None for all.
    """
    if stop is not None:
        head = itertools.islice(unit_messages(job_id, benchmark, config), stop)
        yield from (
            message
            for message in head
            if skip is None or _message_key(job_id, benchmark, config, message[0]) not in skip
        )
        return
    spec = JobSpec(benchmark, config)
    for qi, question in enumerate(benchmark.questions):
        for ai, answering in enumerate(config.answering_models):
            for replicate in range(1, config.replicate_count + 1):
                if (
                    skip is not None
                    and spec.unit(question, answering, replicate).key(job_id) in skip
                ):
                    continue
                labels = {
                    "question_id": question.id,
                    "answering": answering.identity().display_string,
                }
                ref = UnitRef(
                    job_id=job_id, question_index=qi, answering_index=ai, replicate=replicate
                )
                yield ref, labels
    for si, scenario in enumerate(benchmark.scenarios):
        for ai, answering in enumerate(config.answering_models):
            for replicate in range(1, config.replicate_count + 1):
                if skip is not None and (
                    ScenarioUnit(scenario, answering, replicate).key(job_id) in skip
                ):
                    continue
                labels = {
                    "scenario_id": scenario.id,
                    "answering": answering.identity().display_string,
                }
                ref = UnitRef(
                    job_id=job_id,
                    question_index=si,
                    answering_index=ai,
                    replicate=replicate,
                    kind="scenario",
                )
                yield ref, labels


def _message_key(
    job_id: str, benchmark: Benchmark, config: VerificationConfig, ref: UnitRef
) -> str:
    answering = config.answering_models[ref.answering_index]
    if ref.kind == "scenario":
        scenario = benchmark.scenarios[ref.question_index]
        return ScenarioUnit(scenario, answering, ref.replicate).key(job_id)
    question = benchmark.questions[ref.question_index]
    return JobSpec(benchmark, config).unit(question, answering, ref.replicate).key(job_id)
