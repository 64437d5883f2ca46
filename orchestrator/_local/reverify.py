"""Re-verifying stored results in this process: the local runner's machinery
(concurrency, resume from the output file, journal) over stored units instead
of fresh ones; nothing calls an answering model."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator

from verifleet.pipeline import (
    PipelineResources,
    ScenarioReplay,
    ScenarioRun,
    answering_model_of,
    group_stored,
    group_stored_scenarios,
    reverify_unit,
    run_scenario_unit,
)
from verifleet.pipeline._reverify import StoredUnitKey
from verifleet.schemas import (
    Benchmark,
    BrokenScenario,
    ModelConfig,
    VerificationConfig,
    VerificationResult,
)
from verifleet.store import ScenarioUnit, Unit

from .runner import LocalRunner, failed_unit_results

__all__ = ["ReverifyRunner"]

log = logging.getLogger(__name__)


class ReverifyRunner(LocalRunner):
    """Re-judges every stored unit whose question the benchmark has, and every
    stored scenario run whose scenario it has (turn by turn, routing on the new
    verdicts; see :class:`~verifleet.pipeline.ScenarioReplay`).

    Args:
        benchmark: The (possibly changed) benchmark: templates and rubrics come
            from here, matched to stored results by question id.
        config: The new configuration (its parsing models judge).
        stored: The stored results.
        source: Names the stored run in each new result's ``derived_from``.
        resources: As :class:`LocalRunner`.
    """

    def __init__(
        self,
        benchmark: Benchmark,
        config: VerificationConfig,
        stored: Iterable[VerificationResult],
        *,
        source: str,
        resources: PipelineResources | None = None,
    ) -> None:
        super().__init__(benchmark, config, resources=resources)
        self.source = source
        self._groups = group_stored(stored)
        questions = {q.id: q for q in benchmark.questions}
        answering = {m.identity().canonical_key: m for m in config.answering_models}
        self._units: list[tuple[Unit, StoredUnitKey]] = []
        self.missing_questions: set[str] = set()
        for key, results in self._groups.items():
            question = questions.get(key[0])
            if question is None:
                self.missing_questions.add(key[0])
                continue
            meta = results[0].metadata
            model = answering.get(key[1]) or answering_model_of(
                meta.answering, meta.answering_system_prompt
            )
            self._units.append(
                (Unit(question=question, answering=model, replicate=key[2] or 1), key)
            )
        self._keys = {id(unit): key for unit, key in self._units}
        scenarios = {s.id: s for s in benchmark.scenarios}
        self._runs = group_stored_scenarios(stored)
        self._scenario_units: list[tuple[ScenarioUnit, StoredUnitKey]] = []
        self.missing_scenarios: set[str] = set()
        for key, turns in self._runs.items():
            scenario = scenarios.get(key[0])
            if scenario is None:
                self.missing_scenarios.add(key[0])
                continue
            meta = turns[0][0].metadata
            model = answering.get(key[1]) or answering_model_of(
                meta.answering, meta.answering_system_prompt
            )
            self._scenario_units.append(
                (ScenarioUnit(scenario=scenario, answering=model, replicate=key[2] or 1), key)
            )
        self._run_keys = {id(unit): key for unit, key in self._scenario_units}

    def units(self) -> Iterator[Unit]:
        """The stored units to re-judge, in the stored order."""
        return (unit for unit, _ in self._units)

    def count_units(self) -> int:
        """How many stored units are re-judged."""
        return len(self._units)

    def count_scenario_units(self) -> int:
        """How many stored scenario runs are re-judged."""
        return len(self._scenario_units)

    def scenario_units(self) -> Iterator[ScenarioUnit]:
        """The stored scenario runs' units, judged again by :meth:`run_scenarios`
        (a resumed re-verification skips those it wrote)."""
        return (unit for unit, _ in self._scenario_units)

    def _broken_runs(
        self,
        done: set[str] | frozenset[str],
        on_skip: Callable[[ScenarioUnit | BrokenScenario], None] | None,
    ) -> Iterator[tuple[BrokenScenario, ScenarioRun]]:
        return iter(())  # a broken scenario has no stored run to judge again

    def _run_scenario(self, unit: ScenarioUnit) -> ScenarioRun:
        replay = ScenarioReplay(turns=self._runs[self._run_keys[id(unit)]], source=self.source)
        return run_scenario_unit(unit, self.spec, self.resources, replay=replay)

    def answering_models(self) -> list[ModelConfig]:
        """The answering models of the stored units."""
        seen: dict[str, ModelConfig] = {}
        for unit, _ in self._units:
            seen.setdefault(unit.answering.identity().canonical_key, unit.answering)
        for scenario_unit, _ in self._scenario_units:
            seen.setdefault(
                scenario_unit.answering.identity().canonical_key, scenario_unit.answering
            )
        return list(seen.values())

    def _run_one(self, unit: Unit) -> list[VerificationResult]:
        stored = self._groups[self._keys[id(unit)]]
        try:
            return reverify_unit(
                unit.question,
                unit.answering,
                self.config.parsing_models,
                self.config,
                stored,
                source=self.source,
                replicate=unit.replicate,
                rubric=self.benchmark.rubric_for(unit.question),
                dynamic_rubric=self.benchmark.dynamic_rubric_for(unit.question),
                resources=self.resources,
            )
        except Exception as exc:  # the unit fails, the re-verification goes on
            log.exception("re-verifying %s failed outside the pipeline", unit.question.id)
            return failed_unit_results(unit, self.config.parsing_models, self.config, exc)
