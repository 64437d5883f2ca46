"""``bench/redis_cost.py`` for earlier commits and this checkout, alternating in one run.

Usage::

    .venv/bin/python bench/redis_cost_ab.py --before 30bff0a                 # 3 rounds
    .venv/bin/python bench/redis_cost_ab.py --before 30bff0a --before ea8b7f1 --rounds 4 -- --n 10000

Redis's CPU per unit on this machine moves with its load and with what one
wake-up of an idle redis-server costs (bench/log/2026-11-22_to_28.md, "Redis cost per unit"),
so figures of two commits compare only when measured side by side in the same
minutes. Each ``--before`` commit is installed once into a cache folder
(``--cache``; its files by ``git archive``, ``pip install --no-deps --target``,
and a venv that sees that install first and then this interpreter's
dependencies): no second checkout or full install is needed. The "after" side is
this interpreter with this checkout's code.

Every side runs *this checkout's* ``bench/redis_cost.py`` (copied into an empty
folder, so that its imports of ``verifleet`` reach the side's code, the bench
process's progress polls included). Sides alternate (before..., after, then
after, ...before) so a drift in the machine's load favours none; every run
prints the load before it, and the end prints each figure's median per side and
this checkout's CPU per unit as a ratio to each commit's. Arguments after ``--``
go to ``bench/redis_cost.py``.

Every side runs with ``VERIFLEET_SANDBOX=seccomp`` unless the environment sets
it: a commit installed this way cannot start its executors under bubblewrap
(they bind the commit's folders, not the dependencies'), and the sandbox costs
Redis nothing.

Nothing is asserted. A run that fails (non-zero exit, or no figure in its
output) stops the script with that run's output and exit status.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python bench/redis_cost_ab.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.ab import alternate, load_average

ROOT = Path(__file__).resolve().parent.parent

_FIGURES = {
    "units/s": re.compile(r"^\d+ units in [0-9.]+s \(([0-9.]+) units/s\)", re.MULTILINE),
    "cpu us/unit": re.compile(r"^redis-server CPU\s+([0-9.]+) us/unit", re.MULTILINE),
    "user us/unit": re.compile(r"^of which user ([0-9.]+) us/unit", re.MULTILINE),
    "system us/unit": re.compile(r"system ([0-9.]+) us/unit \(sockets", re.MULTILINE),
    "requests/unit": re.compile(r"^requests read ([0-9.]+)/unit", re.MULTILINE),
    "commands/unit": re.compile(r"commands\s+([0-9.]+)/unit", re.MULTILINE),
    "messages/unit": re.compile(r"^brpop\s+([0-9.]+)", re.MULTILINE),
}


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def build_side(rev: str, cache: Path) -> Path:
    """An interpreter that imports ``rev``'s verifleet, built once into ``cache``.

    Raises:
        subprocess.CalledProcessError: ``rev`` is unknown, or its install failed.
    """
    sha = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    home = cache / sha[:12]
    python = home / "venv" / "bin" / "python"
    if python.exists():
        return python
    shutil.rmtree(home, ignore_errors=True)
    (home / "src").mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", sha], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(home / "src")], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise subprocess.CalledProcessError(archive.returncode, "git archive")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    # Quiet unless it fails: old commits' packaging draws pages of setuptools warnings.
    done = subprocess.run(
        [*pip, "--target", str(home / "site"), str(home / "src")], capture_output=True, text=True
    )
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        done.check_returncode()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(home / "venv")], check=True)
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # .pth files are read in name order: the commit's code first, then this
    # interpreter's dependencies (whose own .pth files, this checkout's
    # editable install among them, are not read from a path added this way).
    Path(purelib, "a_before.pth").write_text(f"{home / 'site'}\n")
    Path(purelib, "b_dependencies.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n")
    return python


def _run(python: Path, folder: Path, bench_args: list[str]) -> dict[str, float]:
    """One ``bench/redis_cost.py`` run with ``python``; its figures by name.

    Raises:
        SystemExit: the run failed or printed no figure (its output is shown).
    """
    proc = subprocess.run(
        [str(python), "-m", "bench.redis_cost", *bench_args],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "VERIFLEET_SANDBOX": os.environ.get("VERIFLEET_SANDBOX", "seccomp")},
    )
    figures = {}
    for name, pattern in _FIGURES.items():
        found = pattern.search(proc.stdout)
        if found:
            figures[name] = float(found.group(1))
    if proc.returncode != 0 or "cpu us/unit" not in figures:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"{python}: bench/redis_cost.py failed (exit {proc.returncode})")
    return figures


def main(argv: list[str] | None = None) -> int:
    """Build the sides, alternate their runs, then print the medians."""
    parser = argparse.ArgumentParser(prog="bench/redis_cost_ab.py", description=__doc__)
    parser.add_argument(
        "--before", action="append", required=True, help="a commit to compare (repeatable)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="runs per side (default 3)")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "verifleet-bench-sides",
        help="where commits are installed (kept for later runs)",
    )
    parser.add_argument("bench_args", nargs="*", help="after --: bench/redis_cost.py's own")
    args = parser.parse_args(argv)
    sides: dict[str, Path] = {}
    for rev in args.before:
        print(f"installing {rev} ...", flush=True)
        sides[f"before {_git('rev-parse', '--short', rev)}"] = build_side(rev, args.cache)
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    sides[f"after {_git('rev-parse', '--short', 'HEAD')}{'+dirty' if dirty else ''}"] = Path(
        sys.executable
    )
    print(f"bench/redis_cost.py {' '.join(args.bench_args)}, {args.rounds} rounds, alternating")
    with tempfile.TemporaryDirectory(prefix="redis-cost-ab-") as folder:
        shutil.copytree(
            ROOT / "bench", Path(folder, "bench"), ignore=shutil.ignore_patterns("__pycache__")
        )
        runs = alternate(
            sides, args.rounds, lambda python: _run(python, Path(folder), args.bench_args)
        )
    after = list(sides)[-1]
    print(f"\nmedians over {args.rounds} runs")
    print(f"{'figure':<16}" + "".join(f"{name:>22}" for name in sides))
    for figure in _FIGURES:
        cells = []
        for name in sides:
            values = [r[figure] for r in runs[name] if figure in r]
            cells.append(f"{statistics.median(values):22.2f}" if values else f"{'-':>22}")
        print(f"{figure:<16}" + "".join(cells))
    mine = statistics.median(r["cpu us/unit"] for r in runs[after])
    for name in list(sides)[:-1]:
        theirs = statistics.median(r["cpu us/unit"] for r in runs[name])
        print(f"CPU per unit, {after} / {name}: {mine / theirs:.2f}")
    print(f"load after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
