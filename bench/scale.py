"""A large job end to end: submit, run on two workers, store, export to Parquet.

Usage::

    .venv/bin/python bench/scale.py                                  # 100,000 units
    .venv/bin/python bench/scale.py --questions 2000                 # 20,000 units
    .venv/bin/python bench/scale.py --export-only 100000 --compare-slow  # export only
    nice -n 15 .venv/bin/python bench/scale.py --units 1000000      # issue 23: a million
    .venv/bin/python bench/scale.py --units 20000                   # the same, small

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

``--units N`` (issue 23, "a million units") runs N units as N / 100 questions
x 5 answering models x 20 replicates with ``--results-to`` (a temporary folder
unless given): the workers (started as ``verifleet worker``, which drains)
move finished results into Parquet shards as the job runs. It prints, every
30 s, the units done, units/s, Redis ``used_memory`` (and the highest seen;
sampled every 2 s) and each worker's RSS, so that a run stopped early still
gives figures; then the submit (time, <= 2 min; peak RSS, <= 300 MB), Redis's
peak over the run (the sampled maximum and its own ``used_memory_peak``;
<= 300 MB), workers' RSS over the run (no growth), the time from the job's end
to the final Parquet file (``Job.export``, what ``verifleet results JOB --out``
runs, reading shards and Redis) and whether that file holds exactly N distinct
result keys.

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
import threading
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
# Issue 23, a million units with --results-to.
MILLION = {"submit_s": 120.0, "submit_mb": 300.0, "redis_mb": 300.0}


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
    job = Job.submit(bench, config, args.redis, results_to=args.results_to)
    return {
        "job_id": job.job_id,
        "build_s": built,
        "submit_s": time.perf_counter() - start - built,
        "imported_mb": imported,
        "peak_mb": peak_mb(),
    }


def _child_export(args: argparse.Namespace) -> dict[str, Any]:
    """In a fresh process: stream the job's results (shards and Redis) into
    Parquet; with ``--count-keys`` also count the file's rows and distinct
    ``result_key`` values (after the peak RSS of the export was taken)."""
    figures = run_export(args.redis, args.job, Path(args.out), args.export_path)
    if args.count_keys:
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        column = pq.read_table(args.out, columns=["result_key"]).column("result_key")
        figures["file_rows"] = len(column)
        figures["distinct_keys"] = pc.count_distinct(column).as_py()
    return figures


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


class _Sampler(threading.Thread):
    """Samples Redis memory every 2 s and, every 30 s, prints a progress line
    (units, units/s, Redis memory, drained results, workers' RSS, load), so a
    run stopped early still leaves its figures.

    ``job`` is set once the submit has returned; until then the lines show
    Redis and the workers only.
    """

    def __init__(self, redis_proc: RedisProc, workers: WorkerProcs, units: int) -> None:
        super().__init__(name="scale-sampler", daemon=True)
        self.client = redis_proc.client()
        self.workers = workers
        self.units = units
        self.job: Any = None
        self.began = time.perf_counter()
        self.max_used = 0
        self.rss: list[tuple[int, list[float]]] = []  # (units done, RSS of each worker)
        self.lines = 0
        self._stop_event = threading.Event()
        self._last: tuple[float, int] = (self.began, 0)

    def memory(self) -> tuple[int, int]:
        """(``used_memory``, ``used_memory_peak``) now, and the sampled maximum updated."""
        info = self.client.info("memory")
        used = int(info["used_memory"])
        self.max_used = max(self.max_used, used)
        return used, int(info["used_memory_peak"])

    def run(self) -> None:
        last_line = time.perf_counter()
        while not self._stop_event.wait(2.0):
            with contextlib.suppress(Exception):  # a sample lost is not a failed run
                used, peak = self.memory()
                if time.perf_counter() - last_line >= 30:
                    last_line = time.perf_counter()
                    self.line(used, peak)

    def line(self, used: int, peak: int) -> None:
        now = time.perf_counter()
        done = drained = 0
        if self.job is not None:
            done = self.job.progress().done_units
            meta = self.job.store.keys(self.job.job_id).meta
            drained = int(self.client.hget(meta, "drained") or 0)
        rss = self.workers.rss_mb()
        self.rss.append((done, rss))
        when, before = self._last
        self._last = (now, done)
        print(
            f"  [{now - self.began:5.0f}s] {done}/{self.units} units ({done / self.units:.1%}), "
            f"{(done - before) / (now - when):.0f} units/s over the last {now - when:.0f}s; "
            f"redis used {used / 2**20:.0f} MB (max sampled {self.max_used / 2**20:.0f}, "
            f"used_memory_peak {peak / 2**20:.0f}); drained {drained}; workers RSS "
            + ", ".join(f"{mb:.0f}" for mb in rss)
            + f" MB; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
            flush=True,
        )

    def stop(self) -> None:
        """Stop sampling (after the current sample)."""
        self._stop_event.set()


def _units_shape(units: int) -> tuple[int, int, int]:
    """(questions, answering models, replicates) of an ``--units`` job: N / 100
    questions x 5 x 20.

    Raises:
        SystemExit: ``units`` is not a positive multiple of 100.
    """
    if units <= 0 or units % 100:
        raise SystemExit("--units must be a positive multiple of 100 (questions x 5 x 20)")
    return units // 100, 5, 20


def _rss_over_run(samples: list[tuple[int, list[float]]], units: int) -> str:
    """Workers' RSS at the first samples past 10%, 50% and 90% of the units, and at
    the last sample: flat from 10% on is "no growth"."""
    marks = []
    for share in (0.1, 0.5, 0.9):
        for done, rss in samples:
            if done >= share * units:
                marks.append(f"{done} units: " + ", ".join(f"{mb:.0f}" for mb in rss))
                break
    if samples:
        done, rss = samples[-1]
        marks.append(f"last sample ({done} units): " + ", ".join(f"{mb:.0f}" for mb in rss))
    return "; ".join(marks) + " MB"


def _settle(job: Any, quiet: float = 5.0, limit: float = 60.0) -> None:
    """Wait until a cancelled job's done count has not moved for ``quiet``
    seconds (at most ``limit``): its units already running finish and are kept."""
    seen, moved, began = -1, time.perf_counter(), time.perf_counter()
    while time.perf_counter() - began < limit:
        done = job.progress().done_units
        if done != seen:
            seen, moved = done, time.perf_counter()
        elif time.perf_counter() - moved >= quiet:
            return
        time.sleep(0.5)


def _run_units(args: argparse.Namespace) -> None:
    """The issue 23 run: ``--units`` units with results drained to shards."""
    from verifleet.orchestrator._fleet.job import Job

    units = args.units
    questions, answering, replicates = _units_shape(units)
    results_to = args.results_to or tempfile.mkdtemp(prefix="vf-scale-shards-")
    print(machine_line())
    print(
        f"job: {questions} questions x {answering} answering x {replicates} replicates = "
        f"{units} units ({units} results), {args.workers} workers x {args.threads} threads, "
        f"instant endpoint, results drained to {results_to}; nice {os.nice(0)}",
        flush=True,
    )
    _bench, answers = capitals(questions)
    del _bench
    began = time.perf_counter()
    with contextlib.ExitStack() as stack:
        endpoint = stack.enter_context(EndpointProc(answers))
        redis_proc = stack.enter_context(RedisProc())
        workers = stack.enter_context(
            WorkerProcs(redis_proc.url, args.workers, concurrency=args.threads, drain=True)
        )
        warm, _ = capitals(200)
        warm_config = fleet_config(endpoint.base_url, parsing="judge")
        Job.submit(warm, warm_config, redis_proc.url).wait(timeout=300, poll=0.2)
        rss_start = workers.rss_mb()
        sampler = _Sampler(redis_proc, workers, units)
        mem_before, _ = sampler.memory()
        print(
            "warm-up  200 units; workers RSS "
            + ", ".join(f"{mb:.0f}" for mb in rss_start)
            + f" MB; redis used {mem_before / 2**20:.1f} MB",
            flush=True,
        )
        sampler.start()
        common = ["--redis", redis_proc.url, "--base-url", endpoint.base_url]
        sizes = ["--questions", str(questions), "--answering", str(answering)]
        sizes += ["--replicates", str(replicates), "--results-to", results_to]
        submitting = time.perf_counter()
        sub = _in_child("submit", *common, *sizes)
        sampler.job = job = Job(sub["job_id"], redis_proc.url)
        submit_wall = time.perf_counter() - submitting
        print(
            f"submit   {submit_wall:.1f}s wall in a child (build {sub['build_s']:.1f}s + submit "
            f"{sub['submit_s']:.1f}s; target <= {MILLION['submit_s']:.0f}s: "
            f"{_verdict(submit_wall, MILLION['submit_s'])}); peak RSS {sub['peak_mb']:.0f} MB "
            f"({sub['imported_mb']:.0f} MB after imports; target <= {MILLION['submit_mb']:.0f} "
            f"MB: {_verdict(sub['peak_mb'], MILLION['submit_mb'])})",
            flush=True,
        )
        seen, moved, stopped = -1, time.perf_counter(), False
        while not (progress := job.progress()).finished:
            now = time.perf_counter()
            if progress.done_units != seen:
                seen, moved = progress.done_units, now
            elif now - moved > 300:
                raise RuntimeError(f"no unit finished in 300 s; worker logs in {workers.logdir}")
            if args.max_minutes and now - submitting > args.max_minutes * 60:
                print(f"STOPPED  after {args.max_minutes} min: cancelling the job", flush=True)
                job.cancel()
                stopped = True
                break
            time.sleep(1.0)
        end = time.perf_counter()
        if stopped:  # the units running at the cancel still finish: count them too
            _settle(job)
        used, peak = sampler.memory()
        sampler.stop()
        sampler.line(used, peak)
        progress = job.progress()
        job_s = end - submitting
        print(
            f"run      {progress.done_units}/{units} units in {job_s:.0f}s from the start of the "
            f"submit = {progress.done_units / job_s:.0f} units/s; {progress.failed_units} failed "
            f"units{' (STOPPED early)' if stopped else ''}",
            flush=True,
        )
        print(
            f"redis    max used_memory sampled every 2 s {sampler.max_used / 2**20:.0f} MB, "
            f"used_memory_peak {peak / 2**20:.0f} MB (target <= {MILLION['redis_mb']:.0f} MB: "
            f"{_verdict(max(sampler.max_used, peak) / 2**20, MILLION['redis_mb'])}); "
            f"{mem_before / 2**20:.0f} MB before the submit, {used / 2**20:.0f} MB at the end",
            flush=True,
        )
        print(
            "workers  RSS after warm-up "
            + ", ".join(f"{mb:.0f}" for mb in rss_start)
            + " MB; "
            + _rss_over_run(sampler.rss, units),
            flush=True,
        )
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "results.parquet"
            options = ["--redis", redis_proc.url, "--job", job.job_id, "--out", str(out)]
            exp = _in_child("export", "--export-path", "fast", "--count-keys", *options)
        to_file = time.perf_counter() - end
        expected = progress.done_units  # one parsing model: one result per unit
        ok = exp["file_rows"] == exp["distinct_keys"] == expected
        print(
            f"export   {to_file:.0f}s from the job's end to the final Parquet file "
            f"({exp['rows']} rows written in {exp['seconds']:.0f}s in the child; peak RSS "
            f"{exp['peak_mb']:.0f} MB; file {exp['bytes'] / 2**20:.0f} MB; load "
            f"{exp['load']:.2f}); {exp['file_rows']} rows, {exp['distinct_keys']} distinct "
            f"result keys, expected {expected}: {'met' if ok else 'MISSED'}",
            flush=True,
        )
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
    parser.add_argument(
        "--units",
        type=int,
        default=0,
        metavar="N",
        help="issue 23 run: N units (N/100 questions x 5 x 20) drained with --results-to",
    )
    parser.add_argument(
        "--results-to",
        metavar="DIR",
        help="with --units: where the shards go (default: a new temporary folder)",
    )
    parser.add_argument(
        "--max-minutes",
        type=float,
        default=0.0,
        help="with --units: cancel the job after this long and report what was measured",
    )
    parser.add_argument("--count-keys", action="store_true", help=argparse.SUPPRESS)
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
    elif args.units:
        _run_units(args)
    else:
        _run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
