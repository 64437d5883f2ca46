"""What a user waits for: one ``verifleet run`` command, start to finish (issue 36).

Usage::

    .venv/bin/python bench/startup.py --n 600 --latency-ms 500 --cap 64 --before 55b9e18
    .venv/bin/python bench/startup.py --n 100000 --first-only --before main   # start-up alone
    .venv/bin/python bench/startup.py --n 100000 --submit --before main       # submit's return

Writes an N-question benchmark (each question its own template), starts the
endpoint double (``bench/endpoint.py``: latency L, C calls in flight) in its own
process, and runs ``verifleet run`` against it as a user would, in a process of
its own, for this checkout and each ``--before`` commit (installed once as in
``bench/redis_cost_ab.py``), alternating (before, this, this, before, ...). Per
run: the whole command's wall time and CPU (the command and every process it
started: sandbox executors included, the endpoint not), when the first unit
finished (its journal line appeared; it started one answer and one parse
earlier, ~2 L), the job phase the command reports, and the whole command's
units/s as a share of the endpoint's limit C / L / 2 units/s, and the command's
phases (start-up before the job, the job, finalize, summary and exit).
``--first-only`` interrupts each command once its first unit is done: the
start-up of a 100,000-question benchmark without running it. ``--submit`` times
``verifleet submit`` of the benchmark instead (to a private ``redis-server`` the
bench starts, no workers): until the command returns, its CPU, and the units it
queued (``--strict``: ``submit --strict``, every template compiled). Each run has a
cache folder of its own (``VERIFLEET_CACHE_DIR``); this checkout's executor
bytecode is prepared once before the first run, as any earlier run leaves it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import (
    EndpointProc,
    RedisProc,
    capitals,
    cpu_seconds,
    descendant_pids,
    machine_line,
)
from bench.redis_cost_ab import build_side
from verifleet.schemas import dump_benchmark

ROOT = Path(__file__).resolve().parent.parent
_JOB = re.compile(r"(\d+) units in ([0-9.]+)s")
_ENQUEUED = re.compile(r"(\d+) units enqueued")


def _site_paths(python: Path) -> None:
    """Let an installed commit see every package folder this interpreter
    sees (a venv whose packages come from another venv's ``.pth``)."""
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    extra = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
    Path(purelib, "c_site_paths.pth").write_text("\n".join(extra) + "\n")


def run_command(
    python: Path,
    bench: Path,
    url: str,
    work: Path,
    label: str,
    *,
    own_cache: bool = True,
    first_only: bool = False,
) -> dict[str, float]:
    """One ``verifleet run`` of ``bench`` against ``url``'s model ``m``, timed;
    ``own_cache``: with a cache folder of this label's under ``work`` (else the
    user's, as any earlier run left it); ``first_only``: interrupt the command
    (SIGINT, as Ctrl-C) once its first unit is done.

    Returns:
        Seconds from the start: ``wall`` (exit), ``first`` (first unit's journal
        line), ``finalize`` (its temporary output appeared), ``written`` (the
        output file appeared); ``job`` (the phase the command reports) and
        ``cpu`` (the command and the processes it started).

    Raises:
        SystemExit: the command failed (its stderr's tail printed).
    """
    out = work / f"{label}-{time.monotonic_ns()}.parquet"
    journal = out.with_name(out.name + ".journal.jsonl")
    env = dict(os.environ)
    if own_cache:
        env["VERIFLEET_CACHE_DIR"] = str(work / f"cache-{label}")
    env.setdefault("VERIFLEET_SANDBOX", "seccomp")
    model = f"{url}#m"
    argv = [str(python), "-m", "verifleet", "run", str(bench), "--answering", model]
    argv += ["--parsing", model, "--out", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    # Not from a checkout's root: its top-level folders would shadow the install.
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=work)
    first = finalize = written = None
    while proc.poll() is None:
        now = time.monotonic() - started
        if first is None and (journal.exists() or out.exists()):
            first = now
            if first_only:
                proc.send_signal(signal.SIGINT)
        if finalize is None and any(out.parent.glob(f"*.{out.name}.tmp-*")):
            finalize = now
        if written is None and out.exists():
            written = now
        time.sleep(0.02)
    wall = time.monotonic() - started
    stdout, stderr = proc.communicate()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0 and not (first_only and proc.returncode == 130):
        sys.stderr.write(stderr.decode()[-3000:])
        raise SystemExit(f"{label}: verifleet run failed (exit {proc.returncode})")
    text = " ".join((stdout + stderr).decode().split())
    job = _JOB.search(text)
    return {
        "wall": wall,
        "cpu": cpu,
        "first": first if first is not None else wall,
        "finalize": finalize if finalize is not None else float("nan"),
        "written": written if written is not None else float("nan"),
        "job": float(job.group(2)) if job else float("nan"),
    }


def submit_command(
    python: Path, bench: Path, url: str, redis_url: str, work: Path, *, strict: bool = False
) -> dict[str, float]:
    """One ``verifleet submit`` of ``bench`` (answering and parsing model
    ``url``'s ``m``) to ``redis_url`` (``--strict`` with ``strict``), timed
    until it returns.

    Returns:
        ``wall`` (seconds to its exit), ``cpu`` (the command and the
        processes it reaped), ``tree_cpu`` (the command and every process
        under it, sampled from /proc while it runs: the sandbox's executors
        and template processes are killed, not reaped, when it exits, so
        ``cpu`` leaves them out) and ``units`` (the units it says it enqueued).

    Raises:
        SystemExit: the command failed (its stderr's tail printed).
    """
    env = dict(os.environ)
    env["VERIFLEET_CACHE_DIR"] = str(work / "cache-submit")
    env.setdefault("VERIFLEET_SANDBOX", "seccomp")
    model = f"{url}#m"
    argv = [str(python), "-m", "verifleet", "submit", str(bench), "--answering", model]
    argv += ["--parsing", model, "--redis", redis_url] + (["--strict"] if strict else [])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=work)
    # Each process's CPU as last seen (a template process lives for a few
    # hundred templates, so 50 ms samples miss little of it).
    seen: dict[int, float] = {}
    with ThreadPoolExecutor(1) as reader:
        output = reader.submit(proc.communicate)
        while proc.poll() is None:
            for pid in [proc.pid, *descendant_pids(proc.pid)]:
                seen[pid] = max(seen.get(pid, 0.0), cpu_seconds(pid))
            time.sleep(0.05)
        stdout, stderr = output.result()
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.stderr.write(stderr.decode()[-3000:])
        raise SystemExit(f"verifleet submit failed (exit {proc.returncode})")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # The command's own CPU from rusage (exact); its descendants' as sampled.
    tree_cpu = max(cpu, cpu + sum(seen.values()) - seen.get(proc.pid, 0.0))
    enqueued = _ENQUEUED.search(stdout.decode())
    units = float(enqueued.group(1)) if enqueued else 0.0
    return {"wall": wall, "cpu": cpu, "tree_cpu": tree_cpu, "units": units}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--latency-ms", type=float, default=500.0)
    parser.add_argument("--cap", type=int, default=64)
    parser.add_argument("--before", action="append", default=[], help="a commit to compare")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--first-only",
        action="store_true",
        help="interrupt each command once its first unit is done (start-up of large N)",
    )
    parser.add_argument(
        "--submit",
        action="store_true",
        help="time `verifleet submit` of the benchmark (private redis-server, no workers)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="with --submit: `verifleet submit --strict` (every template compiled at submit)",
    )
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="per run: calls the endpoint admitted per 0.5 s from the command's start, "
        "as a share of the limit (where the job loses time: its start, a dip, the tail)",
    )
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "vf-ab")
    args = parser.parse_args(argv)

    sides: list[tuple[str, Path]] = []
    for rev in args.before:
        python = build_side(rev, args.cache)
        _site_paths(python)
        sides.append((rev, python))
    sides.append(("this", ROOT / ".venv" / "bin" / "python"))
    limit = args.cap / (args.latency_ms / 1000.0) / 2.0
    with tempfile.TemporaryDirectory(prefix="vf-startup-") as tmp:
        work = Path(tmp)
        benchmark, answers = capitals(args.n)
        path = work / "bench.json"
        dump_benchmark(benchmark, path)
        (work / "answers.json").write_text(json.dumps(answers))
        # This checkout's executor bytecode, as a run before this one leaves it.
        prepare = "from verifleet.sandbox import SandboxSettings as S; "
        prepare += "from verifleet.sandbox._bytecode import prepare_bytecode as p; "
        prepare += "d = S.from_env().bytecode_dir; d and p(d)"
        subprocess.run(
            [str(sides[-1][1]), "-c", prepare],
            env={**os.environ, "VERIFLEET_CACHE_DIR": str(work / "cache-this")},
            check=True,
        )
        options = ["--latency-ms", str(args.latency_ms), "--max-concurrency", str(args.cap)]
        print(machine_line(), flush=True)
        print(
            f"N={args.n} L={args.latency_ms:g} ms C={args.cap}: limit {limit:.1f} units/s",
            flush=True,
        )
        rows: dict[str, list[dict[str, float]]] = {label: [] for label, _ in sides}
        if args.submit:
            _submits(args, sides, path, answers, options, work)
            return 0
        with EndpointProc(answers, options) as endpoint:
            for round_ in range(args.rounds):
                order = sides if round_ % 2 == 0 else list(reversed(sides))
                for label, python in order:
                    load = os.getloadavg()[0]
                    endpoint.reset()  # its counters and timeline start with the command
                    got = run_command(
                        python, path, endpoint.base_url, work, label, first_only=args.first_only
                    )
                    rows[label].append(got)
                    if args.first_only:
                        print(
                            f"load {load:4.1f} {label:>8}: first unit done at "
                            f"{got['first']:5.1f} s (interrupted, exit at {got['wall']:5.1f} s), "
                            f"CPU {got['cpu']:5.1f} s",
                            flush=True,
                        )
                        continue
                    rate = args.n / got["wall"]
                    print(
                        f"load {load:4.1f} {label:>8}: whole {got['wall']:6.1f} s "
                        f"({rate:5.1f} units/s = {rate / limit:.2f} of the limit), "
                        f"CPU {got['cpu']:6.1f} s ({1000 * got['cpu'] / args.n:5.1f} ms/unit), "
                        f"first unit done at {got['first']:5.1f} s, job phase {got['job']:5.1f} s",
                        flush=True,
                    )
                    # Phases: before the job (start-up), the job, finalize
                    # (temporary output to the file), the summary and exit.
                    before_job = got["finalize"] - got["job"]
                    print(
                        f"{'':>23}phases: start-up {before_job:5.1f} s, job {got['job']:5.1f} s, "
                        f"finalize {got['written'] - got['finalize']:4.1f} s, "
                        f"summary and exit {got['wall'] - got['written']:4.1f} s",
                        flush=True,
                    )
                    if args.timeline:
                        _timeline(endpoint.stats(), 2 * limit)
    return 0


def _submits(
    args: argparse.Namespace,
    sides: list[tuple[str, Path]],
    path: Path,
    answers: dict[str, Any],
    options: list[str],
    work: Path,
) -> None:
    """``--submit``: each side's ``verifleet submit``, alternating, each into
    a fresh private Redis."""
    with EndpointProc(answers, options) as endpoint:
        for round_ in range(args.rounds):
            order = sides if round_ % 2 == 0 else list(reversed(sides))
            for label, python in order:
                load = os.getloadavg()[0]
                with RedisProc() as redis_proc:
                    got = submit_command(
                        python, path, endpoint.base_url, redis_proc.url, work, strict=args.strict
                    )
                how = "submit --strict" if args.strict else "submit"
                print(
                    f"load {load:4.1f} {label:>8}: {how} of {args.n} questions returned in "
                    f"{got['wall']:5.1f} s, CPU {got['cpu']:5.1f} s (with the sandbox's processes "
                    f"{got['tree_cpu']:5.1f} s), {got['units']:.0f} units enqueued",
                    flush=True,
                )


def _timeline(stats: dict[str, Any], calls_per_s: float) -> None:
    """The calls the endpoint admitted per 0.5 s since the command started, as
    a share of what it admits at its limit (``calls_per_s``), and the calls it
    refused."""
    admitted: list[int] = stats["admitted"]
    per_half = [sum(admitted[i : i + 5]) for i in range(0, len(admitted), 5)]
    cells = " ".join(f"{n / (calls_per_s / 2):.2f}" for n in per_half)
    print(f"{'':>23}admitted per 0.5 s / limit: {cells}", flush=True)
    print(f"{'':>23}{stats['calls']} calls, {stats['sent_429']} answered 429", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
