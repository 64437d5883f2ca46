"""A unit of a re-verification job (``reverify_of``): the source job's stored
results of the same unit are judged again; no answering model is called."""

from __future__ import annotations

from verifleet.pipeline import PipelineResources, reverify_unit
from verifleet.schemas import VerificationResult
from verifleet.store import ResultStore, Unit

from ._jobs import JobCache, JobSpec

__all__ = ["reverify_fleet_unit"]


def reverify_fleet_unit(
    store: ResultStore,
    jobs: JobCache,
    spec: JobSpec,
    unit: Unit,
    *,
    resources: PipelineResources,
    deadline: float,
) -> list[VerificationResult]:
    """Re-judge ``unit`` from the stored results of ``spec.config.reverify_of``.

    The source's results are found by their deterministic keys (the source's
    question of the same id, its parsing models); a unit the source has no
    answer for gets results that say so.

    Raises:
        KeyError: the source job is gone from the store.
        redis.RedisError: Redis is unreachable.
    """
    source_id = spec.config.reverify_of
    assert source_id is not None
    source = jobs.get(source_id)
    question = next((q for q in source.benchmark.questions if q.id == unit.question.id), None)
    stored: list[VerificationResult] = []
    if question is not None:
        # The source's own spec names its keys (its evaluation mode decides
        # the template id they carry).
        keys = source.result_keys(source.unit(question, unit.answering, unit.replicate), source_id)
        stored = [r for r in store.get_results(source_id, keys) if r is not None]
    return reverify_unit(
        unit.question,
        unit.answering,
        spec.config.parsing_models,
        spec.config,
        stored,
        source=f"job:{source_id}",
        replicate=unit.replicate,
        rubric=spec.benchmark.rubric_for(unit.question),
        dynamic_rubric=spec.benchmark.dynamic_rubric_for(unit.question),
        resources=resources,
        deadline=deadline,
    )
