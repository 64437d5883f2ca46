"""verifleet's own CPU time per unit with an instant endpoint, local vs fleet.

Usage::

    .venv/bin/python bench/overhead.py            # 500 units, 1 worker, 16 threads
    .venv/bin/python bench/overhead.py --n 2000 --workers 2
    .venv/bin/python bench/overhead.py --chat-client langchain   # the langchain path

The endpoint answers at once (no latency), so every CPU second spent is
verifleet's (pipeline, model client, HTTP, Celery, Redis client, compression) or
the endpoint's, and the endpoint runs in a process of its own, not counted.
Each unit makes two model calls (answer, parse). The models are OpenAI-compatible,
so they go through verifleet's direct HTTP client unless ``--chat-client
langchain`` sets every model's ``chat_client`` to ``langchain`` (an A/B of the
two paths on the same machine; the workers read it from the job's config).

Each mode first runs a small warm-up job of other questions (``--warmup``), so
that what a process pays once (its sandbox executors starting, lazy imports,
connection pools) is not charged to the units. Then the same job runs twice:
``cold`` is the first run, where each question's template is compiled and its
judge schema built (once per process and template); ``warm`` runs the same
questions again as a new job, which is what every unit after the first of its
question costs (other answering models, replicates). Fleet figures are the
worker processes' CPU, their sandbox executors' included (from /proc), the
submitting process's CPU and Redis's CPU, each per unit.

Mode ``cli`` (in the default modes) is the whole ``verifleet run`` command on
the same questions (``bench/startup.py``'s run, at its defaults, in a process of
its own): its wall time and CPU per unit (start-up, its sandbox executors and
finalize included) beside the job phase it reports.

Nothing is asserted; the script prints figures.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python bench/overhead.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import (
    EndpointProc,
    RedisProc,
    WorkerProcs,
    capitals,
    cpu_seconds,
    fleet_config,
    machine_line,
    self_cpu_seconds,
)
from verifleet.orchestrator._fleet.job import Job
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.schemas import Benchmark, VerificationConfig

TARGET_MS = 4.0  # issue 13: <= 4 ms of worker CPU per unit, cold or warm


def _local(bench: Benchmark, config: VerificationConfig, label: str) -> None:
    n = len(bench.questions)
    cpu, start = self_cpu_seconds(), time.perf_counter()
    done = sum(1 for _ in LocalRunner(bench, config).run())
    wall, cpu = time.perf_counter() - start, self_cpu_seconds() - cpu
    assert done == n, f"{done} of {n} units"
    print(
        f"local  {label}: {cpu / n * 1000:6.2f} ms CPU/unit ({n / wall:.0f} units/s, {wall:.1f}s)",
        flush=True,
    )


def _fleet(
    bench: Benchmark,
    config: VerificationConfig,
    redis_proc: RedisProc,
    workers: WorkerProcs,
    label: str,
) -> float:
    n = len(bench.questions)
    assert redis_proc.proc is not None
    redis_cpu, worker_cpu = cpu_seconds(redis_proc.proc.pid), workers.cpu_seconds()
    own, start = self_cpu_seconds(), time.perf_counter()
    job = Job.submit(bench, config, redis_proc.url)
    submit_cpu = self_cpu_seconds() - own
    progress = job.wait(poll=0.1)
    wall = time.perf_counter() - start
    worker_cpu = workers.cpu_seconds() - worker_cpu
    redis_cpu = cpu_seconds(redis_proc.proc.pid) - redis_cpu
    assert progress.done_units == n and not progress.failed_units, progress
    per = worker_cpu / n * 1000
    print(
        f"fleet  {label}: {per:6.2f} ms CPU/unit in workers "
        f"(+ submit {submit_cpu / n * 1000:.2f}, redis {redis_cpu / n * 1000:.2f}; "
        f"{n / wall:.0f} units/s, {wall:.1f}s)  target <= {TARGET_MS:g} ms: "
        f"{'met' if per <= TARGET_MS else 'MISSED'}",
        flush=True,
    )
    return per


def main(argv: list[str] | None = None) -> int:
    """Run local then fleet, cold then warm; print one line each."""
    parser = argparse.ArgumentParser(prog="bench/overhead.py", description=__doc__)
    parser.add_argument("--n", type=int, default=500, help="units per run (default 500)")
    parser.add_argument("--threads", type=int, default=16, help="threads per runner/worker")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument(
        "--modes", default="local,fleet,cli", help="comma-separated (cli: verifleet run)"
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=50,
        help="units of a warm-up job of other questions run first (default 50; 0: none)",
    )
    parser.add_argument(
        "--chat-client",
        choices=["direct", "langchain"],
        default="direct",
        help="model client path (default: direct HTTP)",
    )
    args = parser.parse_args(argv)
    modes = {m.strip() for m in args.modes.split(",")}
    print(machine_line())
    print(
        f"n={args.n} units x 2 calls, instant endpoint, {args.threads} threads, "
        f"{args.chat_client} chat client",
        flush=True,
    )
    # The warm-up's questions come after the measured ones: other templates.
    everything, answers = capitals(args.n + args.warmup)
    bench = everything.model_copy(update={"questions": everything.questions[: args.n]})
    warmup = everything.model_copy(update={"questions": everything.questions[args.n :]})
    with EndpointProc(answers) as endpoint:
        config = fleet_config(endpoint.base_url, max_concurrency=args.threads)
        client = "langchain" if args.chat_client == "langchain" else "http"
        config = config.model_copy(
            update={
                role: [m.model_copy(update={"chat_client": client}) for m in getattr(config, role)]
                for role in ("answering_models", "parsing_models")
            }
        )
        if "local" in modes:
            if args.warmup:
                sum(1 for _ in LocalRunner(warmup, config).run())
            _local(bench, config, "cold")
            _local(bench, config, "warm")
        if "fleet" in modes:
            with (
                RedisProc() as redis_proc,
                WorkerProcs(redis_proc.url, args.workers, concurrency=args.threads) as workers,
            ):
                if args.warmup:
                    Job.submit(warmup, config, redis_proc.url).wait(poll=0.1)
                _fleet(bench, config, redis_proc, workers, "cold")
                _fleet(bench, config, redis_proc, workers, "warm")
                rss = ", ".join(f"{mb:.0f} MB" for mb in workers.rss_mb())
                print(f"fleet  worker resident memory after both runs: {rss}")
        if "cli" in modes:
            from bench.throughput import run_command

            got = run_command(bench, endpoint.base_url)
            print(
                f"cli    whole command: {got['wall']:.1f}s wall, CPU "
                f"{1000 * got['cpu'] / args.n:.2f} ms/unit (start-up, executors and finalize "
                f"included); job phase {got['job']:.1f}s, first unit done at {got['first']:.1f}s",
                flush=True,
            )
        print(f"endpoint CPU (not counted above): {endpoint.cpu_seconds():.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
