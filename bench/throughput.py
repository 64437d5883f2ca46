"""Throughput against an endpoint with latency L and a concurrency cap C.

Usage::

    .venv/bin/python bench/throughput.py                      # L=100 ms, C=16, 600 units
    .venv/bin/python bench/throughput.py --latency-ms 50 --cap 32 --n 2000
    .venv/bin/python bench/throughput.py --modes local --profile

Each unit makes two calls (answer, then parse) to one model name, so both share
the cap: the limit is ``C / L`` calls/s, i.e. ``C / (2 L)`` units/s. The bench
runs the same job in local mode (this process), then in fleet mode with one and
with two ``verifleet worker`` processes, and prints units/s, calls/s and the ratio
of calls/s to the limit. A fleet run is preceded by a small warm-up job so that
process start-up (imports, client construction, template compilation) is not
counted; the local run warms up the same way.

When the limit is above 200 calls/s (or with ``--profile``) it also prints the
CPU-bound ceiling (units/s per core of verifleet CPU, with an instant endpoint)
and a profile summary of one local unit stream: where the CPU time goes, by
package and by function.

Nothing is asserted; the script prints figures. The endpoint runs in its own
process, so its CPU is not counted as verifleet's.
"""

from __future__ import annotations

import argparse
import sys
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
from verifleet.orchestrator._fleet.job import Job
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.schemas import Benchmark, VerificationConfig

CALLS_PER_UNIT = 2
PROFILE_ABOVE = 200.0  # calls/s: above this the machine, not the limit, is the bound


def _subset(bench: Benchmark, n: int) -> Benchmark:
    return bench.model_copy(update={"questions": bench.questions[:n]})


def run_local(bench: Benchmark, config: VerificationConfig) -> tuple[float, float]:
    """Run the job in this process; returns (wall seconds, CPU seconds)."""
    cpu, start = self_cpu_seconds(), time.perf_counter()
    runner = LocalRunner(bench, config)
    count = sum(1 for _ in runner.run())
    wall = time.perf_counter() - start
    if count != runner.count_units():
        raise RuntimeError(f"local run yielded {count} units of {runner.count_units()}")
    return wall, self_cpu_seconds() - cpu


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
    calls_s = calls / wall
    print(
        f"{label:<10} {units / wall:8.1f} units/s {calls_s:8.1f} calls/s "
        f"ratio {calls_s / limit:5.2f}  peak in-flight {peak:3d}  ({wall:.1f}s){extra}",
        flush=True,
    )


def _ceiling(args: argparse.Namespace) -> None:
    """Units/s per core of verifleet CPU with an instant endpoint, plus a profile."""
    bench, answers = capitals(max(1, args.profile_n // args.replicates))
    n = len(bench.questions) * args.replicates
    with EndpointProc(answers) as endpoint:
        config = fleet_config(
            endpoint.base_url, max_concurrency=args.threads, replicate_count=args.replicates
        )
        run_local(_subset(bench, 20), config)  # warm-up: clients, imports
        wall, cpu = run_local(bench, config)
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
    parser.add_argument("--modes", default="local,fleet1,fleet2", help="comma-separated")
    parser.add_argument(
        "--replicates",
        type=int,
        default=1,
        help="units per question (default 1: every unit compiles a new template)",
    )
    parser.add_argument("--threads", type=int, default=0, help="threads per runner (0: 2*C)")
    parser.add_argument("--profile", action="store_true", help="always print the ceiling")
    parser.add_argument("--profile-n", type=int, default=300, help="units of the ceiling run")
    parser.add_argument("--profile-top", type=int, default=15, help="functions listed")
    args = parser.parse_args(argv)
    args.threads = args.threads or 2 * args.cap
    limit = args.cap / (args.latency_ms / 1000) if args.latency_ms > 0 else float("inf")
    questions = max(1, args.n // args.replicates)
    args.n = questions * args.replicates
    print(machine_line())
    print(
        f"n={args.n} units ({args.replicates} per question), L={args.latency_ms:g} ms, "
        f"C={args.cap}, threads={args.threads}: "
        f"limit C/L = {limit:.0f} calls/s = {limit / CALLS_PER_UNIT:.0f} units/s",
        flush=True,
    )
    bench, answers = capitals(questions)
    warm = _subset(bench, min(questions, 2 * args.threads))
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    with EndpointProc(answers, ["--latency-ms", str(args.latency_ms)]) as endpoint:
        config = fleet_config(
            endpoint.base_url,
            cap=args.cap,
            max_concurrency=args.threads,
            unit_deadline=600,
            replicate_count=args.replicates,
        )
        for mode in modes:
            if mode == "local":
                run_local(warm, config)
                endpoint.reset()
                wall, cpu = run_local(bench, config)
                stats = endpoint.stats()
                extra = f"  CPU {cpu / args.n * 1000:.1f} ms/unit"
                _report(mode, args.n, wall, stats["calls"], limit, stats["peak_in_flight"], extra)
            elif mode.startswith("fleet"):
                count = int(mode.removeprefix("fleet") or 1)
                with (
                    RedisProc() as redis_proc,
                    WorkerProcs(redis_proc.url, count, concurrency=args.threads) as workers,
                ):
                    run_fleet(warm, config, redis_proc.url)
                    endpoint.reset()
                    cpu = workers.cpu_seconds()
                    wall = run_fleet(bench, config, redis_proc.url)
                    cpu = workers.cpu_seconds() - cpu
                    stats = endpoint.stats()
                extra = f"  worker CPU {cpu / args.n * 1000:.1f} ms/unit"
                _report(mode, args.n, wall, stats["calls"], limit, stats["peak_in_flight"], extra)
            else:
                parser.error(f"unknown mode {mode!r} (local, fleet1, fleet2, ...)")
            if stats["sent_429"]:
                print(f"           ({stats['sent_429']} calls answered 429)")
    if args.profile or limit > PROFILE_ABOVE:
        _ceiling(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
