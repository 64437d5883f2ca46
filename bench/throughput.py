"""Throughput against an endpoint with latency L and a concurrency cap C.

Usage::

    .venv/bin/python bench/throughput.py                      # L=100 ms, C=16, 600 units
    .venv/bin/python bench/throughput.py --latency-ms 50 --cap 32 --n 2000
    .venv/bin/python bench/throughput.py --modes local --profile
    .venv/bin/python bench/throughput.py --defaults --latency-ms 500 --cap 64 --n 2000 \
        --modes local,fleet2 --round-trips

``--defaults`` is what a user who sets nothing gets: the model has no
``max_concurrency``, the local runner and the workers keep their default
thread counts, and the endpoint itself admits C calls in flight, answering 429
(``Retry-After: 1``) beyond: the adaptive window has to find C. Without it,
the model is capped at C and runners get 2 C threads (the endpoint takes any
number).

Each unit makes two calls (answer, then parse) to one model name, so both share
the cap: the limit is ``C / L`` calls/s, i.e. ``C / (2 L)`` units/s. The bench
runs the same job in local mode (this process), then in fleet mode with one and
with two ``verifleet worker`` processes, and prints units/s, calls/s and the ratio
of the work done (2 calls per unit, refused calls not counted) to the limit. A fleet run is preceded by a small warm-up job so that
process start-up (imports, client construction) is not counted; the local run
warms up the same way. The warm-up's questions are not the measured job's, so
every measured unit compiles a new template (unless ``--replicates``), and the
endpoints' windows are forgotten after it (local: a new runner; fleet: the
``vf:limit:*`` keys deleted), so the measured job starts from a cold window.

When the limit is above 200 calls/s (or with ``--profile``) it also prints the
CPU-bound ceiling (units/s per core of verifleet CPU, with an instant endpoint)
and a profile summary of one local unit stream: where the CPU time goes, by
package and by function.

Mode ``cli`` (in the default modes) is what a user waits for: one ``verifleet
run`` command at its defaults (``bench/startup.py``'s run) on the same questions
against the same endpoint, in a process of its own, timed from its start to its
exit: the whole command's units/s and ratio, its CPU (with its sandbox
executors) per unit, and beside them the job phase it reports and when its first
unit finished.

Nothing is asserted; the script prints figures. The endpoint runs in its own
process, so its CPU is not counted as verifleet's.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python bench/throughput.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import (
    EndpointProc,
    RedisProc,
    WorkerProcs,
    capitals,
    fleet_config,
    machine_line,
    self_cpu_seconds,
)
from bench._profile import profile_local
from verifleet.limits import LocalCallGate, RedisCallGate, Window
from verifleet.orchestrator._fleet.job import Job
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.schemas import Benchmark, VerificationConfig

CALLS_PER_UNIT = 2
PROFILE_ABOVE = 200.0  # calls/s: above this the machine, not the limit, is the bound


def _subset(bench: Benchmark, n: int) -> Benchmark:
    return bench.model_copy(update={"questions": bench.questions[:n]})


def run_local(bench: Benchmark, config: VerificationConfig) -> tuple[float, float, Window | None]:
    """Run the job in this process; returns (wall seconds, CPU seconds, the
    parsing model's window at the end)."""
    cpu, start = self_cpu_seconds(), time.perf_counter()
    runner = LocalRunner(bench, config)
    count = sum(1 for _ in runner.run())
    wall = time.perf_counter() - start
    if count != runner.count_units():
        raise RuntimeError(f"local run yielded {count} units of {runner.count_units()}")
    gate = runner.resources.call_gate
    window = gate.window(config.parsing_models[0]) if isinstance(gate, LocalCallGate) else None
    return wall, self_cpu_seconds() - cpu, window


def run_command(bench: Benchmark, base_url: str) -> dict[str, float]:
    """One ``verifleet run`` of ``bench`` at its defaults, as a user starts it
    (``bench/startup.py``): wall, CPU (with its executors), first unit, job phase.

    Raises:
        SystemExit: the command failed.
    """
    from bench.startup import run_command as startup_run
    from verifleet.schemas import dump_benchmark

    with tempfile.TemporaryDirectory(prefix="vf-throughput-") as tmp:
        work = Path(tmp)
        dump_benchmark(bench, work / "bench.json")
        python = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "python"
        return startup_run(python, work / "bench.json", base_url, work, "cli", own_cache=False)


def _window_text(window: Window | None) -> str:
    if window is None:
        return ""
    peak = "none" if window.peak is None else f"{window.peak:.0f}"
    return f"  window at the end {window.size:.1f} (last pushback at {peak} in flight)"


def run_fleet(bench: Benchmark, config: VerificationConfig, redis_url: str) -> float:
    """Submit and wait; returns wall seconds from submit to the last result.

    Raises:
        RuntimeError: the job finished with failed units (the figures would lie).
    """
    start = time.perf_counter()
    job = Job.submit(bench, config, redis_url)
    progress = job.wait(poll=0.05)
    wall = time.perf_counter() - start
    if progress.failed_units:
        raise RuntimeError(f"{progress.failed_units} units failed; see the workers' logs")
    return wall


def _report(
    label: str, units: int, wall: float, calls: int, limit: float, peak: int, extra: str = ""
) -> None:
    # The ratio counts units, not calls: a call answered 429 did no work.
    calls_s = calls / wall
    ratio = units * CALLS_PER_UNIT / wall / limit
    print(
        f"{label:<10} {units / wall:8.1f} units/s {calls_s:8.1f} calls/s "
        f"ratio {ratio:5.2f}  peak in-flight {peak:3d}  ({wall:.1f}s){extra}",
        flush=True,
    )


def _timeline(admitted: list[int], limit: float) -> None:
    """Calls the endpoint admitted per half second, as a share of the limit:
    where a run loses time (the start, a pause, the tail)."""
    per_half = [sum(admitted[i : i + 5]) for i in range(0, len(admitted), 5)]
    full = limit / 2
    cells = " ".join(f"{n / full:.2f}" for n in per_half)
    print(f"           admitted per 0.5 s / limit: {cells}", flush=True)


def _ceiling(args: argparse.Namespace) -> None:
    """Units/s per core of verifleet CPU with an instant endpoint, plus a profile."""
    bench, answers = capitals(max(1, args.profile_n // args.replicates))
    n = len(bench.questions) * args.replicates
    with EndpointProc(answers) as endpoint:
        config = fleet_config(
            endpoint.base_url, max_concurrency=args.threads, replicate_count=args.replicates
        )
        run_local(_subset(bench, 20), config)  # warm-up: clients, imports
        wall, cpu, _window = run_local(bench, config)
        print(
            f"ceiling    local, instant endpoint: {n / wall:.1f} units/s, "
            f"{cpu / n * 1000:.1f} ms CPU/unit -> "
            f"{n / cpu:.0f} units/s per core of verifleet CPU "
            f"(endpoint CPU excluded: {endpoint.cpu_seconds():.1f}s)",
            flush=True,
        )
        profile_local(bench, config, top=args.profile_top)


def main(argv: list[str] | None = None) -> int:
    """Run the modes and print one line per mode."""
    parser = argparse.ArgumentParser(prog="bench/throughput.py", description=__doc__)
    parser.add_argument("--n", type=int, default=600, help="units per mode (default 600)")
    parser.add_argument("--latency-ms", type=float, default=100.0, help="endpoint latency L")
    parser.add_argument("--cap", type=int, default=16, help="concurrency cap C of the model")
    parser.add_argument(
        "--modes", default="local,fleet1,fleet2,cli", help="comma-separated (cli: verifleet run)"
    )
    parser.add_argument(
        "--replicates",
        type=int,
        default=1,
        help="units per question (default 1: every unit compiles a new template)",
    )
    parser.add_argument("--threads", type=int, default=0, help="threads per runner (0: 2*C)")
    parser.add_argument(
        "--defaults",
        action="store_true",
        help="default settings: no cap on the model, default threads; the endpoint admits C",
    )
    parser.add_argument(
        "--round-trips", action="store_true", help="count the workers' Redis round trips"
    )
    parser.add_argument("--profile", action="store_true", help="always print the ceiling")
    parser.add_argument(
        "--timeline", action="store_true", help="calls admitted per 0.5 s, as a share of the limit"
    )
    parser.add_argument("--profile-n", type=int, default=300, help="units of the ceiling run")
    parser.add_argument("--profile-top", type=int, default=15, help="functions listed")
    args = parser.parse_args(argv)
    args.threads = args.threads or 2 * args.cap
    limit = args.cap / (args.latency_ms / 1000) if args.latency_ms > 0 else float("inf")
    questions = max(1, args.n // args.replicates)
    args.n = questions * args.replicates
    print(machine_line())
    threads = "defaults" if args.defaults else f"threads={args.threads}"
    where = "the endpoint admits C (429 beyond)" if args.defaults else "the model's cap is C"
    print(
        f"n={args.n} units ({args.replicates} per question), L={args.latency_ms:g} ms, "
        f"C={args.cap} ({where}), {threads}: "
        f"limit C/L = {limit:.0f} calls/s = {limit / CALLS_PER_UNIT:.0f} units/s",
        flush=True,
    )
    warm_n = 64
    everything, answers = capitals(questions + warm_n)
    bench = _subset(everything, questions)
    warm = everything.model_copy(update={"questions": everything.questions[questions:]})
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    options = ["--latency-ms", str(args.latency_ms)]
    if args.defaults:
        options += ["--max-concurrency", str(args.cap)]
    with EndpointProc(answers, options) as endpoint:
        config = fleet_config(
            endpoint.base_url,
            cap=None if args.defaults else args.cap,
            unit_deadline=600,
            replicate_count=args.replicates,
            **({} if args.defaults else {"max_concurrency": args.threads}),
        )
        for mode in modes:
            if mode == "local":
                run_local(warm, config)
                endpoint.reset()
                wall, cpu, window = run_local(bench, config)
                stats = endpoint.stats()
                extra = f"  CPU {cpu / args.n * 1000:.1f} ms/unit" + _window_text(window)
                _report(mode, args.n, wall, stats["calls"], limit, stats["peak_in_flight"], extra)
            elif mode == "cli":
                endpoint.reset()
                got = run_command(bench, endpoint.base_url)
                stats = endpoint.stats()
                extra = (
                    f"  whole command, CPU {got['cpu'] / args.n * 1000:.1f} ms/unit; job phase "
                    f"{got['job']:.1f}s ({args.n / got['job']:.1f} units/s), first unit done at "
                    f"{got['first']:.1f}s"
                )
                _report(
                    mode, args.n, got["wall"], stats["calls"], limit, stats["peak_in_flight"], extra
                )
            elif mode.startswith("fleet"):
                count = int(mode.removeprefix("fleet") or 1)
                with (
                    RedisProc() as redis_proc,
                    WorkerProcs(
                        redis_proc.url,
                        count,
                        concurrency=None if args.defaults else args.threads,
                        count_round_trips=args.round_trips,
                    ) as workers,
                ):
                    run_fleet(warm, config, redis_proc.url)
                    client = redis_proc.client()
                    for key in client.scan_iter("vf:limit:*"):
                        client.delete(key)  # the measured job starts from a cold window
                    endpoint.reset()
                    cpu, trips = workers.cpu_seconds(), workers.round_trips()
                    wall = run_fleet(bench, config, redis_proc.url)
                    cpu = workers.cpu_seconds() - cpu
                    time.sleep(0.5)  # the round-trip counts are written every 0.2 s
                    trips = workers.round_trips() - trips
                    stats = endpoint.stats()
                    gate = RedisCallGate(client, lease_seconds=1, max_wait=0)
                    window = gate.window(config.parsing_models[0])
                extra = f"  worker CPU {cpu / args.n * 1000:.1f} ms/unit"
                if args.round_trips:
                    extra += f"  Redis round trips {trips / args.n:.1f}/unit"
                extra += _window_text(window)
                _report(mode, args.n, wall, stats["calls"], limit, stats["peak_in_flight"], extra)
            else:
                parser.error(f"unknown mode {mode!r} (local, fleet1, fleet2, ...)")
            if stats["sent_429"]:
                print(f"           ({stats['sent_429']} calls answered 429)")
            if args.timeline:
                _timeline(stats["admitted"], limit)
    if args.profile or limit > PROFILE_ABOVE:
        _ceiling(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
