"""Running multi-turn scenarios through the pipeline.

Re-exported by :mod:`verifleet.pipeline`; import from there.
"""

from __future__ import annotations

import typing

from verifleet import _lazy

if typing.TYPE_CHECKING:
    from ._outcomes import evaluate_outcomes
    from ._run import ScenarioReplay, ScenarioRun, next_edge, run_scenario, run_scenario_unit

# name -> the submodule that defines it, loaded on first use: a run of
# questions alone never imports the agent runtime (langchain, langgraph)
_LAZY: dict[str, str] = {
    "evaluate_outcomes": "._outcomes",
    "ScenarioReplay": "._run",
    "ScenarioRun": "._run",
    "next_edge": "._run",
    "run_scenario": "._run",
    "run_scenario_unit": "._run",
}

__all__ = [
    "ScenarioReplay",
    "ScenarioRun",
    "evaluate_outcomes",
    "next_edge",
    "run_scenario",
    "run_scenario_unit",
]


__getattr__, __dir__ = _lazy.exports(__name__, _LAZY)
