"""Running multi-turn scenarios through the pipeline.

Re-exported by :mod:`verifleet.pipeline`; import from there.
"""

from ._outcomes import evaluate_outcomes
from ._run import ScenarioReplay, ScenarioRun, next_edge, run_scenario, run_scenario_unit

__all__ = [
    "ScenarioReplay",
    "ScenarioRun",
    "evaluate_outcomes",
    "next_edge",
    "run_scenario",
    "run_scenario_unit",
]
