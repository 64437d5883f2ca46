"""A large job end to end: submit, run on two workers, store, export to Parquet.

Usage::

    .venv/bin/python bench/scale.py                                  # 100,000 units
    .venv/bin/python bench/scale.py --questions 2000                 # 20,000 units
    .venv/bin/python bench/scale.py --export-only 100000 --compare-slow  # export only

The job is ``--questions`` x ``--answering`` models x ``--replicates`` units
(default 10,000 x 5 x 2 = 100,000), one parsing model, against the instant
endpoint. Printed figures and their targets:

- submit time and the submitting process's peak resident memory (<= 200 MB),
  measured in a child process that builds the benchmark and submits it;
- run time and units/s on ``--workers`` worker processes;
- Redis memory per stored result (<= 2 KB for a typical result): growth of
  ``used_memory`` over the job divided by the results, and the mean compressed
  blob next to it;
- Parquet export rate (>= 20,000 results/s) and the exporting process's peak
  resident memory (<= 500 MB), again in a child process (``--compare-slow``
  also exports through the validating reference path, for a before/after);
- each worker's resident memory after a warm-up job and at the end (no growth
  beyond noise).

``--export-only N`` skips the run: it writes N results shaped like this job's
straight into a private redis-server with the store API (as workers write them;
see ``bench/_stored.py``) and measures the export alone, in a few minutes.

Peak memory is the child's ``ru_maxrss`` (the OS high-water mark, which also
counts native buffers). Nothing is asserted; the script prints figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python bench/scale.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import (
    EndpointProc,
    RedisProc,
    WorkerProcs,
    capitals,
    fleet_config,
    machine_line,
    peak_mb,
    rss_mb,
)
from bench._stored import capitals_results, export_in_child, fill_store, run_export

TARGETS = {"submit_mb": 200.0, "result_bytes": 2048.0, "export_rate": 20_000.0, "export_mb": 500.0}


def _child_submit(args: argparse.Namespace) -> dict[str, Any]:
    """In a fresh process: build the benchmark and config, submit, report."""
    from verifleet.orchestrator._fleet.job import Job

    imported = rss_mb(os.getpid())
    start = time.perf_counter()
    bench, _answers = capitals(args.questions)
    del _answers
    config = fleet_config(
        args.base_url,
        answering=[f"answerer{i}" for i in range(args.answering)],
        parsing="judge",
        replicate_count=args.replicates,
    )
    built = time.perf_counter() - start
    job = Job.submit(bench, config, args.redis)
    return {
        "job_id": job.job_id,
        "build_s": built,
        "submit_s": time.perf_counter() - start - built,
        "imported_mb": imported,
        "peak_mb": peak_mb(),
    }


def _child_export(args: argparse.Namespace) -> dict[str, Any]:
    """In a fresh process: stream the job's results from Redis into Parquet."""
    return run_export(args.redis, args.job, Path(args.out), args.export_path)


def _in_child(phase: str, *options: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--phase", phase, *options],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{phase} child failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _mean_blob(client: Any, key: str, sample: int = 2000) -> float:
    sizes = []
    for field, _ in client.hscan_iter(key, count=500):
        sizes.append(client.hstrlen(key, field))
        if len(sizes) >= sample:
            break
    return sum(sizes) / max(len(sizes), 1)


def _fill(client: Any, key: str, total: int) -> None:
    """Copy the job's stored blobs under new fields until ``total`` are stored.

    Only for measuring the export at a size the run itself did not reach: the
    copies are real results of this job (the same bytes), under new keys.
    """
    fields = [f for f, _ in client.hscan_iter(key, count=1000)]
    have, copy = len(fields), 0
    while have < total:
        copy += 1
        for offset in range(0, len(fields), 1000):
            batch = fields[offset : offset + min(1000, total - have)]
            if not batch:
                return
            pipe = client.pipeline(transaction=False)
            for blob, field in zip(client.hmget(key, batch), batch, strict=True):
                pipe.hset(key, field + f":copy{copy}".encode(), blob)
            pipe.execute()
            have += len(batch)


def _verdict(value: float, target: float, *, at_most: bool = True) -> str:
    ok = value <= target if at_most else value >= target
    return "met" if ok else "MISSED"


def _run(args: argparse.Namespace) -> None:
    from verifleet.orchestrator._fleet.job import Job

    units = args.questions * args.answering * args.replicates
    print(machine_line())
    print(
        f"job: {args.questions} questions x {args.answering} answering x {args.replicates} "
        f"replicates = {units} units ({units} results), {args.workers} workers x "
        f"{args.threads} threads, instant endpoint",
        flush=True,
    )
    _bench, answers = capitals(args.questions)
    del _bench
    began = time.perf_counter()
    with contextlib.ExitStack() as stack:
        endpoint = stack.enter_context(EndpointProc(answers))
        redis_proc = stack.enter_context(RedisProc())
        workers: WorkerProcs | None = None
        rss_start: list[float] = []
        if not args.submit_only:  # workers would eat the queue being measured
            workers = stack.enter_context(
                WorkerProcs(redis_proc.url, args.workers, concurrency=args.threads)
            )
            warm, _ = capitals(min(args.questions, 200))
            warm_config = fleet_config(endpoint.base_url, parsing="judge")
            Job.submit(warm, warm_config, redis_proc.url).wait(timeout=300, poll=0.2)
            rss_start = workers.rss_mb()
        client = redis_proc.client()
        mem_before = redis_proc.used_memory()

        common = ["--redis", redis_proc.url, "--base-url", endpoint.base_url]
        sizes = ["--questions", str(args.questions), "--answering", str(args.answering)]
        sizes += ["--replicates", str(args.replicates)]
        submitting = time.perf_counter()
        sub = _in_child("submit", *common, *sizes)
        print(
            f"submit   build {sub['build_s']:.1f}s + submit {sub['submit_s']:.1f}s "
            f"({units / sub['submit_s']:.0f} units/s); peak RSS {sub['peak_mb']:.0f} MB "
            f"({sub['imported_mb']:.0f} MB after imports) target <= {TARGETS['submit_mb']:.0f} MB: "
            f"{_verdict(sub['peak_mb'], TARGETS['submit_mb'])}",
            flush=True,
        )
        mem_queued = redis_proc.used_memory()
        print(f"queue    {(mem_queued - mem_before) / 2**20:.0f} MB in Redis for {units} tasks")
        if workers is None:
            return
        job = Job(sub["job_id"], redis_proc.url)
        # The workers start on the first batch while the rest is still being sent,
        # so the job's wall time and rate count from the start of the submit.
        at_submit_end = job.progress().done_units
        start = last = moved = time.perf_counter()
        seen = -1
        print(f"  ... {at_submit_end}/{units} units done by the end of the submit", flush=True)
        while not (progress := job.progress()).finished:
            now = time.perf_counter()
            if progress.done_units != seen:
                seen, moved = progress.done_units, now
            elif now - moved > 300:
                raise RuntimeError(f"no unit finished in 300 s; worker logs in {workers.logdir}")
            if now - last >= 30:
                rate = (progress.done_units - at_submit_end) / (now - start)
                rss = ", ".join(f"{mb:.0f}" for mb in workers.rss_mb())
                print(
                    f"  ... {progress.done_units}/{units} units, {rate:.0f} units/s; "
                    f"workers RSS {rss} MB",
                    flush=True,
                )
                last = now
            time.sleep(1.0)
        end = time.perf_counter()
        job_s, after_s = end - submitting, end - start
        print(
            f"run      {units} units in {job_s:.0f}s from the start of the submit = "
            f"{units / job_s:.0f} units/s ({(units - at_submit_end) / after_s:.0f} units/s "
            f"after it), {progress.failed_units} failed units",
            flush=True,
        )
        mem_after = redis_proc.used_memory()
        per_result = (mem_after - mem_before) / progress.results
        blob = _mean_blob(client, job.store.keys(job.job_id).results)
        print(
            f"redis    {(mem_after - mem_before) / 2**20:.0f} MB for {progress.results} results = "
            f"{per_result:.0f} B/result (mean compressed blob {blob:.0f} B; queue held "
            f"{(mem_queued - mem_before) / 2**20:.0f} MB at submit) target <= "
            f"{TARGETS['result_bytes']:.0f} B: {_verdict(per_result, TARGETS['result_bytes'])}",
            flush=True,
        )
        rss_end = workers.rss_mb()
        if args.fill_to > progress.results:
            _fill(client, job.store.keys(job.job_id).results, args.fill_to)
            print(f"fill     copied stored results up to {args.fill_to} for the export", flush=True)
        print(
            "workers  RSS after warm-up "
            + ", ".join(f"{mb:.0f}" for mb in rss_start)
            + " MB; at the end "
            + ", ".join(f"{mb:.0f}" for mb in rss_end)
            + " MB",
            flush=True,
        )
        _export(redis_proc.url, job.job_id, args.compare_slow)
    print(f"total    {time.perf_counter() - began:.0f}s")


def _export(url: str, job_id: str, compare_slow: bool) -> None:
    """Export the job in a child process (and by the reference path too)."""
    for path in ("fast", "slow") if compare_slow else ("fast",):
        with tempfile.TemporaryDirectory() as tmp:
            exp = export_in_child(__file__, url, job_id, Path(tmp) / "results.parquet", path)
        rate = exp["rows"] / exp["seconds"]
        print(
            f"export   [{path}] {exp['rows']} rows in {exp['seconds']:.1f}s = {rate:.0f} results/s "
            f"(target >= {TARGETS['export_rate']:.0f}: "
            f"{_verdict(rate, TARGETS['export_rate'], at_most=False)}); CPU {exp['cpu_s']:.1f}s; "
            f"peak RSS {exp['peak_mb']:.0f} MB ({exp['imported_mb']:.0f} after imports; target <= "
            f"{TARGETS['export_mb']:.0f}: {_verdict(exp['peak_mb'], TARGETS['export_mb'])}); "
            f"file {exp['bytes'] / 2**20:.1f} MB; load {exp['load']:.2f}",
            flush=True,
        )


def _export_only(args: argparse.Namespace) -> None:
    """Store results shaped like the job's with the store API, then export them."""
    print(machine_line())
    began = time.perf_counter()
    with RedisProc() as redis_proc:
        mem_before = redis_proc.used_memory()
        results = capitals_results(args.export_only, answering=args.answering)
        stored = fill_store(redis_proc.url, "export-bench", results, args.export_only)
        per_result = (redis_proc.used_memory() - mem_before) / stored
        print(
            f"store    {stored} results written with the store API in "
            f"{time.perf_counter() - began:.0f}s ({per_result:.0f} B/result in Redis)",
            flush=True,
        )
        _export(redis_proc.url, "export-bench", args.compare_slow)
    print(f"total    {time.perf_counter() - began:.0f}s")


def main(argv: list[str] | None = None) -> int:
    """Run the whole bench, or one child phase (``--phase``, used internally)."""
    parser = argparse.ArgumentParser(prog="bench/scale.py", description=__doc__)
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--answering", type=int, default=5, help="answering models")
    parser.add_argument("--replicates", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--threads", type=int, default=16, help="threads per worker")
    parser.add_argument(
        "--submit-only", action="store_true", help="submit and measure, then stop (no run)"
    )
    parser.add_argument(
        "--fill-to",
        type=int,
        default=0,
        help="before exporting, copy stored results up to this many (export at scale)",
    )
    parser.add_argument(
        "--export-only",
        type=int,
        default=0,
        metavar="N",
        help="no run: store N results like the job's with the store API and export them",
    )
    parser.add_argument(
        "--compare-slow",
        action="store_true",
        help="also export through the validating reference path (the pre-fast-path export)",
    )
    parser.add_argument("--phase", choices=["submit", "export"], help=argparse.SUPPRESS)
    parser.add_argument("--export-path", choices=["fast", "slow"], help=argparse.SUPPRESS)
    parser.add_argument("--redis", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--job", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase == "submit":
        print(json.dumps(_child_submit(args)))
    elif args.phase == "export":
        print(json.dumps(_child_export(args)))
    elif args.export_only:
        _export_only(args)
    else:
        _run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
