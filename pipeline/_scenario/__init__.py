"""Running multi-turn scenarios through the pipeline.

Re-exported by :mod:`verifleet.pipeline`; import from there.
"""

from __future__ import annotations

import importlib
import typing
from typing import Any

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
