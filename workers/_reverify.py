"""A unit of a re-verification job (``reverify_of``): the source job's stored
results of the same unit (or the same scenario run) are judged again; no
answering model is called."""

from __future__ import annotations

import threading
from collections import OrderedDict

from verifleet.pipeline import (
    PipelineResources,
    ScenarioReplay,
    ScenarioRun,
    group_stored_scenarios,
    reverify_unit,
    run_scenario_unit,
)
from verifleet.pipeline._reverify import StoredUnitKey
from verifleet.schemas import VerificationResult
from verifleet.store import ResultStore, ScenarioUnit, Unit

from ._jobs import JobCache, JobSpec

__all__ = ["reverify_fleet_scenario", "reverify_fleet_unit"]

_SOURCES_KEPT = 4
_runs_lock = threading.Lock()
# A source job's stored scenario runs, read once per process (one scan of its
# results) rather than once per scenario unit.
_runs: OrderedDict[str, dict[StoredUnitKey, list[list[VerificationResult]]]] = OrderedDict()


def _stored_runs(
    store: ResultStore, source_id: str
) -> dict[StoredUnitKey, list[list[VerificationResult]]]:
    with _runs_lock:
        found = _runs.get(source_id)
        if found is not None:
            _runs.move_to_end(source_id)
            return found
    # Outside the lock: a scan of a big job must not hold up other units.
    turns = (r for r in store.iter_results(source_id) if r.metadata.scenario_id is not None)
    found = group_stored_scenarios(turns)
    with _runs_lock:
        _runs[source_id] = found
        while len(_runs) > _SOURCES_KEPT:
            _runs.popitem(last=False)
    return found


def reverify_fleet_scenario(
    store: ResultStore,
    spec: JobSpec,
    unit: ScenarioUnit,
    *,
    resources: PipelineResources,
    deadline: float,
) -> ScenarioRun:
    """Judge the source job's stored run of ``unit``'s scenario (same answering
    model and replicate) again, turn by turn (see
    :class:`~verifleet.pipeline.ScenarioReplay`). A run the source does not have
    ends at once with status ``error`` at stage ``reverify``.

    Raises:
        redis.RedisError: Redis is unreachable.
    """
    source_id = spec.config.reverify_of
    assert source_id is not None
    key = (unit.scenario.id, unit.answering.identity().canonical_key, unit.replicate)
    turns = _stored_runs(store, source_id).get(key, [])
    replay = ScenarioReplay(turns=turns, source=f"job:{source_id}")
    return run_scenario_unit(unit, spec, resources, deadline=deadline, replay=replay)


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
