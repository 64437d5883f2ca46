"""Where one process's CPU time goes while it runs units: a cProfile summary.

cProfile sees one thread only, so the profile runs units one after another on
this thread through :func:`verifleet.pipeline.run_unit` (what both the local
runner and a worker task call). Time is grouped by package (verifleet's own
sub-packages, each third-party distribution, the standard library) and the
functions with the most own time are listed.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import sysconfig
from collections import defaultdict
from pathlib import Path

from verifleet.pipeline import PipelineResources, run_unit
from verifleet.schemas import Benchmark, JobSpec, VerificationConfig

__all__ = ["package_of", "profile_local"]

_ROOT = Path(__file__).resolve().parent.parent
_STDLIB = sysconfig.get_paths()["stdlib"]
_OURS = {"pipeline", "schemas", "workers", "orchestrator", "bench"}


def package_of(filename: str) -> str:
    """A readable owner of a profiled code location (``verifleet.pipeline``, ``httpx``...)."""
    if filename.startswith("~") or filename.startswith("<"):
        return "builtins/C"
    if "site-packages/" in filename:
        return filename.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    if filename.startswith(_STDLIB):
        return "stdlib"
    try:
        top = Path(filename).resolve().relative_to(_ROOT).parts[0]
    except ValueError:
        return "other"
    return f"verifleet.{top}" if top in _OURS else top


def profile_local(bench: Benchmark, config: VerificationConfig, *, top: int = 15) -> None:
    """Run every unit of ``bench`` on this thread under cProfile; print the summary."""
    resources = PipelineResources()
    spec = JobSpec(bench, config)
    units = list(spec.units())
    # warm-up outside the profile: client and template construction
    run_unit(units[0], spec, resources)
    profiler = cProfile.Profile()
    profiler.enable()
    for unit in units:
        run_unit(unit, spec, resources)
    profiler.disable()
    stats = pstats.Stats(profiler)
    raw = stats.stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in raw.values())
    by_package: dict[str, float] = defaultdict(float)
    for (filename, _line, _name), entry in raw.items():
        by_package[package_of(filename)] += entry[2]
    per_unit = total / len(units) * 1000
    print(f"profile    {len(units)} units on one thread: {per_unit:.1f} ms own time per unit")
    print("           by package (share of profiled time):")
    for package, seconds in sorted(by_package.items(), key=lambda kv: -kv[1])[:12]:
        print(
            f"             {seconds / total:6.1%}  {seconds / len(units) * 1000:6.2f} ms  {package}"
        )
    print(f"           top {top} functions by own time:")
    ranked = sorted(raw.items(), key=lambda kv: -kv[1][2])[:top]
    for (filename, line, name), entry in ranked:
        where = f"{package_of(filename)}:{Path(filename).name}:{line}"
        print(f"             {entry[2] / total:6.1%}  {name}  ({where})")
    sys.stdout.flush()
