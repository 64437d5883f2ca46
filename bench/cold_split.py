"""Where a fleet worker's CPU per cold unit goes: its own process or its sandbox executors.

Usage (from the checkout to measure, with that checkout's venv, so the same
script measures the code before and after a change)::

    cd /work/wt-old && .venv/bin/python /path/to/bench/cold_split.py --n 300
    .venv/bin/python bench/cold_split.py

One worker (16 threads) and an instant endpoint, as ``bench/overhead.py``: a
warm-up job of other questions, then the same job of ``--n`` one-question
templates twice (``cold``, then ``warm`` as a new job). For each it prints the
worker process's own CPU per unit, and its descendants' CPU per unit by depth
below it: bubblewrap (1-2), the executor (3: the only executor process before
fresh state; the router since), the spawner (4) and the template processes (5).
Only names shared by the bench harness of every version are imported from it.
Nothing is asserted; the script prints figures.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))  # the checkout being measured, not this file's

from bench._harness import (
    EndpointProc,
    RedisProc,
    WorkerProcs,
    _children,
    capitals,
    cpu_seconds,
    fleet_config,
)
from verifleet.orchestrator._fleet.job import Job

_TICKS = 100


def _reaped(pid: int) -> float:
    """CPU seconds of the children ``pid`` has waited for (0.0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[13]) + int(fields[14])) / _TICKS
    except (OSError, IndexError, ValueError):
        return 0.0


def _tree(pid: int) -> dict[int, tuple[int, float]]:
    """Every live descendant of ``pid``: (depth, CPU seconds with its reaped children)."""
    kids, out = _children(), {}
    stack = [(c, 1) for c in kids.get(pid, [])]
    while stack:
        child, depth = stack.pop()
        out[child] = (depth, cpu_seconds(child) + _reaped(child))
        stack.extend((c, depth + 1) for c in kids.get(child, []))
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the warm-up, cold and warm jobs; print one line each for cold and warm."""
    parser = argparse.ArgumentParser(prog="bench/cold_split.py", description=__doc__)
    parser.add_argument("--n", type=int, default=300, help="units per job (default 300)")
    args = parser.parse_args(argv)
    n = args.n
    everything, answers = capitals(n + 50)
    bench = everything.model_copy(update={"questions": everything.questions[:n]})
    warmup = everything.model_copy(update={"questions": everything.questions[n:]})
    with EndpointProc(answers) as endpoint:
        config = fleet_config(endpoint.base_url, max_concurrency=16)
        with RedisProc() as redis_proc, WorkerProcs(redis_proc.url, 1, concurrency=16) as workers:
            Job.submit(warmup, config, redis_proc.url).wait(poll=0.1)
            pid = workers.procs[0].pid
            for label in ("cold", "warm"):
                own, before = cpu_seconds(pid), _tree(pid)
                Job.submit(bench, config, redis_proc.url).wait(poll=0.1)
                own, after = cpu_seconds(pid) - own, _tree(pid)
                by_depth: dict[int, float] = {}
                for child, (depth, cpu) in after.items():
                    by_depth[depth] = (
                        by_depth.get(depth, 0.0) + cpu - before.get(child, (0, 0.0))[1]
                    )
                tree = ", ".join(
                    f"depth {d} {cpu / n * 1000:.2f}" for d, cpu in sorted(by_depth.items())
                )
                print(f"{label}: worker own {own / n * 1000:.2f} ms CPU/unit; {tree}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
