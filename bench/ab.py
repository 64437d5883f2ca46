"""Two checkouts' ``bench/overhead.py`` side by side, interleaved old, new, new, old, ...

Usage::

    .venv/bin/python bench/ab.py --old /work/wt-old            # 3 rounds, 300 units
    .venv/bin/python bench/ab.py --old ../wt-old --rounds 5 --n 500 --modes fleet

Each side is a checkout with its own ``.venv`` (``bash scripts/install.sh`` in
it): the bench runs as ``<side>/.venv/bin/python bench/overhead.py`` from that
checkout, so each side measures its own code with its own editable install. The
sides alternate (old, new, new, old, old, new, ...) so that a change in the
machine's load (other people's work on a shared machine) falls on both sides
alike; every run prints the load average before it, and the end prints each
figure's median per side (fleet figures: the workers', then the submitting
process's and Redis's, each per unit). The figures are CPU per unit as ``bench/overhead.py`` counts it (the
runner's or worker's CPU with every process of its sandbox executors), not wall
time, which the load distorts far more.

Nothing is asserted. A run that fails (non-zero exit, or a figure missing from
its output) stops the script with that run's output and exit status.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parent.parent

S = TypeVar("S")  # what a side is to its run: a checkout, an interpreter

# "local  cold:   4.56 ms CPU/unit ..." /
# "fleet  warm:   6.06 ms CPU/unit in workers (+ submit 1.20, redis 0.90; ..."
_FIGURE = re.compile(r"^(local|fleet)\s+(cold|warm):\s+([0-9.]+) ms CPU/unit", re.MULTILINE)
_FLEET_EXTRA = re.compile(
    r"^fleet\s+(cold|warm):.*\(\+ submit ([0-9.]+), redis ([0-9.]+);", re.MULTILINE
)


def _commit(side: Path) -> str:
    """Short commit of ``side``, with ``+dirty`` when its tracked files changed."""
    head = subprocess.run(
        ["git", "-C", str(side), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(side), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return f"{head}+dirty" if dirty else head


def load_average() -> str:
    """The machine's load averages (1, 5, 15 min) as /proc/loadavg gives them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def alternate(
    sides: Mapping[str, S],
    rounds: int,
    run: Callable[[S], dict[str, float]],
    *,
    spec: str = "g",
    unit: str = "",
) -> dict[str, list[dict[str, float]]]:
    """Run every side ``rounds`` times, in the order a, b, b, a, a, b, ... (a
    steady drift in the machine's load then favours none), printing each run's
    figures with the load before it. Returns each side's figures, run by run.

    Raises:
        Whatever ``run`` raises (the bench scripts stop on a failed run).
    """
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    forward = list(sides.items())
    for round_no in range(1, rounds + 1):
        order = forward if round_no % 2 else forward[::-1]
        for name, side in order:
            load, start = load_average(), time.perf_counter()
            figures = run(side)
            runs[name].append(figures)
            shown = ", ".join(f"{k} {v:{spec}}" for k, v in figures.items())
            print(
                f"round {round_no} {name}: {shown}{unit}  "
                f"(load before {load}, {time.perf_counter() - start:.0f}s)",
                flush=True,
            )
    return runs


def _run(side: Path, bench_args: list[str]) -> dict[str, float]:
    """One ``bench/overhead.py`` run in ``side``; its figures by "mode temperature".

    Raises:
        SystemExit: the run failed or printed no figure (its output is shown).
    """
    python = side / ".venv" / "bin" / "python"
    proc = subprocess.run(
        [str(python), "bench/overhead.py", *bench_args],
        cwd=side,
        capture_output=True,
        text=True,
    )
    figures = {f"{m[0]} {m[1]}": float(m[2]) for m in _FIGURE.findall(proc.stdout)}
    for temperature, submit, redis in _FLEET_EXTRA.findall(proc.stdout):
        figures[f"fleet {temperature} submit"] = float(submit)
        figures[f"fleet {temperature} redis"] = float(redis)
    if proc.returncode != 0 or not figures:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"{side}: bench/overhead.py failed (exit {proc.returncode})")
    return figures


def main(argv: list[str] | None = None) -> int:
    """Alternate the two sides' runs, then print the medians."""
    parser = argparse.ArgumentParser(prog="bench/ab.py", description=__doc__)
    parser.add_argument("--old", type=Path, required=True, help="checkout A (with its .venv)")
    parser.add_argument(
        "--new", type=Path, default=ROOT, help="checkout B (default: this checkout)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="runs per side (default 3)")
    parser.add_argument("--n", type=int, default=300, help="units per run (default 300)")
    parser.add_argument("--modes", default="local,fleet", help="overhead.py --modes")
    parser.add_argument("--threads", type=int, default=16, help="overhead.py --threads")
    args = parser.parse_args(argv)
    sides = {"old": args.old.resolve(), "new": args.new.resolve()}
    bench_args = ["--n", str(args.n), "--modes", args.modes, "--threads", str(args.threads)]
    for name, side in sides.items():
        print(f"{name}: {side} at {_commit(side)}", flush=True)
    print(f"bench/overhead.py {' '.join(bench_args)}, {args.rounds} rounds, old/new alternating")
    runs = alternate(
        sides, args.rounds, lambda side: _run(side, bench_args), spec=".2f", unit=" ms CPU/unit"
    )
    keys = list(runs["old"][0])
    print(f"\nmedian ms CPU/unit over {args.rounds} runs   old     new  new-old")
    for key in keys:
        old = statistics.median(r[key] for r in runs["old"])
        new = statistics.median(r[key] for r in runs["new"])
        print(f"{key:<36} {old:6.2f}  {new:6.2f}  {new - old:+6.2f}")
    print(f"load after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
