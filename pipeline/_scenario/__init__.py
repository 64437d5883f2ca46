"""Running multi-turn scenarios through the pipeline.

Re-exported by :mod:`verifleet.pipeline`; import from there.
"""

from __future__ import annotations

import typing

from verifleet import _lazy

if typing.TYPE_CHECKING:
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


# Each name of __all__ loads on first use, from the module the TYPE_CHECKING block
# imports it from: a run of questions alone never imports the agent runtime
# (langchain, langgraph).
__getattr__, __dir__ = _lazy.exports(__name__)
