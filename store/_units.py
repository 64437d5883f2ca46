"""Expanding a job into units and naming units and results deterministically."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from verifleet.schemas import ModelConfig, VerificationConfig, compute_unit_key

from ._protocol import UnitRef

if TYPE_CHECKING:
    from verifleet.schemas import Benchmark, Question, VerificationResult

__all__ = ["Unit", "expand_units", "result_key", "unit_key", "unit_messages", "unit_result_keys"]


@dataclass(frozen=True)
class Unit:
    """One (question, answering model, replicate): generates one answer, judged by
    every parsing model."""

    question: Question
    answering: ModelConfig
    replicate: int


def expand_units(benchmark: Benchmark, config: VerificationConfig) -> Iterator[Unit]:
    """Yield every unit of the job lazily, question-major (a job of a million units
    never exists as a list)."""
    for question in benchmark.questions:
        for answering in config.answering_models:
            for replicate in range(1, config.replicate_count + 1):
                yield Unit(question=question, answering=answering, replicate=replicate)


def unit_result_keys(
    unit: Unit, parsing_models: Sequence[ModelConfig], *, job_id: str = ""
) -> list[str]:
    """The keys of the results ``unit`` produces, one per parsing model."""
    answering_key = unit.answering.identity().canonical_key
    return [
        compute_unit_key(
            job_id=job_id,
            question_id=unit.question.id,
            template_id=unit.question.template_id,
            answering_key=answering_key,
            parsing_key=parsing.identity(role="parsing").canonical_key,
            replicate=unit.replicate,
        )
        for parsing in parsing_models
    ]


def unit_key(unit: Unit, *, job_id: str = "") -> str:
    """The deterministic key of a unit (its results' keys with no parsing model)."""
    return compute_unit_key(
        job_id=job_id,
        question_id=unit.question.id,
        template_id=unit.question.template_id,
        answering_key=unit.answering.identity().canonical_key,
        parsing_key="",
        replicate=unit.replicate,
    )


def result_key(result: VerificationResult, *, job_id: str = "") -> str:
    """The deterministic key of a finished result (matches :func:`unit_result_keys`)."""
    meta = result.metadata
    return compute_unit_key(
        job_id=job_id,
        question_id=meta.question_id,
        template_id=meta.template_id,
        answering_key=meta.answering.canonical_key,
        parsing_key=meta.parsing.canonical_key,
        replicate=meta.replicate,
    )


def unit_messages(
    job_id: str, benchmark: Benchmark, config: VerificationConfig, skip: set[str] | None = None
) -> Iterator[tuple[UnitRef, dict[str, str]]]:
    """The task of every unit of a job, in submit order, lazily: its reference and
    the labels that name it in Flower.

    Args:
        skip: Unit keys (:func:`unit_key` with ``job_id``) to leave out, e.g. the
            units already done when a job is resumed.
    """
    for qi, question in enumerate(benchmark.questions):
        for ai, answering in enumerate(config.answering_models):
            for replicate in range(1, config.replicate_count + 1):
                if skip is not None:
                    key = unit_key(Unit(question, answering, replicate), job_id=job_id)
                    if key in skip:
                        continue
                labels = {
                    "question_id": question.id,
                    "answering": answering.identity().display_string,
                }
                ref = UnitRef(
                    job_id=job_id, question_index=qi, answering_index=ai, replicate=replicate
                )
                yield ref, labels
