"""Fleet commands: ``submit``, ``jobs``, ``status``, ``watch``, ``cancel``, ``resume``,
``results``. Each takes ``--redis URL`` (default ``VERIFLEET_REDIS_URL``)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from verifleet.schemas import ConfigError, load_benchmark
from verifleet.store import JobProgress, RedisTarget, ResultStore, mask_password

from .._fleet.broker import Broker
from .._fleet.job import Job, redis_url_from
from .._fleet.submit import submit_job
from ._console import make_console
from ._sandbox import add_sandbox_argument, start_sandbox
from .config import add_config_arguments, build_config

__all__ = ["register"]


def _redis_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--redis", metavar="URL", help="Redis URL (default: $VERIFLEET_REDIS_URL)")


def register(commands: Any) -> None:
    """Add the fleet sub-commands."""
    submit = commands.add_parser(
        "submit",
        help="validate a job and enqueue it for the workers",
        description="Validate everything first (templates, models, rubrics), store the "
        "benchmark and config once, and enqueue one task per unit.",
    )
    submit.add_argument("benchmark", type=Path, help="benchmark file (.yaml, .json or .jsonld)")
    add_config_arguments(submit)
    _redis_arg(submit)
    submit.add_argument("--job-id", help="choose the job id (default: generated)")
    submit.add_argument("--trust-callables", action="store_true", help="allow pickled callables")
    submit.add_argument(
        "--strict",
        action="store_true",
        help="reject the whole job when a question's template does not compile or is refused "
        "(default: that question fails alone, with its error in its results)",
    )
    add_sandbox_argument(submit)
    submit.set_defaults(handler=_submit)

    jobs = commands.add_parser("jobs", help="list jobs, newest first")
    _redis_arg(jobs)
    jobs.add_argument("--limit", type=int, default=20)
    jobs.set_defaults(handler=_jobs)

    for name, handler, text in (
        ("status", _status, "print a job's progress once"),
        ("watch", _watch, "show a job's live progress until it ends"),
        ("cancel", _cancel, "stop new work on a job"),
        ("resume", _resume, "re-enqueue only the units without results"),
    ):
        cmd = commands.add_parser(name, help=text)
        cmd.add_argument("job_id")
        _redis_arg(cmd)
        if name == "watch":
            cmd.add_argument("--interval", type=float, default=2.0, help="seconds between updates")
        cmd.set_defaults(handler=handler)

    results = commands.add_parser("results", help="stream a job's results into a file")
    results.add_argument("job_id")
    results.add_argument("--out", type=Path, required=True, help=".parquet, .json, .jsonl or .csv")
    _redis_arg(results)
    results.set_defaults(handler=_results)


def _url(args: argparse.Namespace) -> str:
    """The Redis URL of ``--redis`` / ``VERIFLEET_REDIS_URL``, checked with one PING so
    that a wrong password, CA or host is one clear line, not a traceback.

    Raises:
        ConfigError: no URL, or a malformed one.
        RedisAccessError: Redis is unreachable or refuses the password or TLS.
    """
    url = redis_url_from(args.redis)
    RedisTarget.parse(url).check()
    return url


def _store(args: argparse.Namespace) -> ResultStore:
    return ResultStore.from_url(_url(args))


def _progress(store: ResultStore, job_id: str) -> JobProgress:
    try:
        return store.progress(job_id)
    except KeyError:
        raise ConfigError(f"no job {job_id!r} (see `verifleet jobs`)") from None


def _submit(args: argparse.Namespace) -> int:
    url = _url(args)
    start_sandbox(args)  # templates and callable traits are checked in sandbox executors
    # Templates are checked by submit_job: a broken one fails its own question
    # (or, with --strict, rejects the job), as `verifleet run` does.
    benchmark = load_benchmark(
        args.benchmark, trust_callables=args.trust_callables, validate_templates=False
    )
    config = build_config(args)
    store = ResultStore.from_url(url)
    broker = Broker(url)
    try:
        report = submit_job(
            benchmark,
            config,
            store=store,
            broker=broker,
            job_id=args.job_id,
            strict=args.strict,
        )
    finally:
        broker.close()
    for problem in report.failing_questions:
        print(f"warning: {problem} (its results will record the error)", file=sys.stderr)
    print(
        f"job {report.job_id}: {report.units} units enqueued ({report.expected_results} results expected)"
    )
    # The URL's password stays out of the terminal (and its scrollback).
    shown = mask_password(url)
    print(f"watch it:    verifleet watch {report.job_id} --redis {shown}")
    print(f"collect it:  verifleet results {report.job_id} --redis {shown} --out results.parquet")
    return 0


def _jobs(args: argparse.Namespace) -> int:
    table = Table(title="jobs")
    for col in ("job", "name", "status", "created", "units done", "failed"):
        table.add_column(col)
    for p in _store(args).list_jobs(limit=args.limit):
        table.add_row(
            p.job_id,
            p.name,
            p.status.value,
            p.created,
            f"{p.done_units}/{p.total_units}",
            str(p.failed_units),
        )
    make_console().print(table)
    return 0


def progress_view(p: JobProgress, rate: float | None) -> Group:
    """The job's counts line and its per-pair pass-rate table."""
    remaining = p.total_units - p.done_units
    eta = f"{remaining / rate:.0f}s" if rate and remaining > 0 else "-"
    # Text, not markup: "[done]" would otherwise be read as a style tag and vanish.
    line = Text(
        f"job {p.job_id} [{p.status.value}]  done {p.done_units}/{p.total_units}  "
        f"failed {p.failed_units}  in flight {p.in_flight}  "
        f"rate {rate or 0:.2f} units/s  ETA {eta}"
    )
    if p.total_scenarios:
        line.append(
            f"\nscenarios {p.scenarios_done}/{p.total_scenarios}  "
            f"scenario errors {p.scenario_errors}"
        )
    table = Table(title="pass rate so far")
    for col in ("answering", "parsing", "passed", "failed", "errors", "pass rate"):
        table.add_column(col)
    for pair in p.pairs:
        rate_text = "n/a" if pair.pass_rate is None else f"{pair.pass_rate:.1%}"
        table.add_row(
            pair.answering,
            pair.parsing,
            str(pair.passed),
            str(pair.failed),
            str(pair.errors),
            rate_text,
        )
    return Group(line, table)


def _status(args: argparse.Namespace) -> int:
    make_console().print(progress_view(_progress(_store(args), args.job_id), None))
    return 0


def _watch(args: argparse.Namespace) -> int:
    store = _store(args)
    first = _progress(store, args.job_id)
    samples = [(time.monotonic(), first.done_units)]
    with Live(progress_view(first, None), refresh_per_second=4) as live:
        while True:
            progress = _progress(store, args.job_id)
            now = time.monotonic()
            samples = [*samples[-30:], (now, progress.done_units)]
            (t0, d0), (t1, d1) = samples[0], samples[-1]
            rate = (d1 - d0) / (t1 - t0) if t1 > t0 else None
            live.update(progress_view(progress, rate))
            if progress.finished:
                return 0
            time.sleep(args.interval)


def _cancel(args: argparse.Namespace) -> int:
    job = Job(args.job_id, _url(args))
    _progress(job.store, args.job_id)
    job.cancel()
    print(
        f"job {args.job_id} cancelled: queued units will be dropped; `verifleet resume` restarts it"
    )
    return 0


def _resume(args: argparse.Namespace) -> int:
    job = Job(args.job_id, _url(args))
    _progress(job.store, args.job_id)
    sent = job.resume()
    print(f"job {args.job_id}: {sent} units re-enqueued")
    return 0


def _results(args: argparse.Namespace) -> int:
    job = Job(args.job_id, _url(args))
    _progress(job.store, args.job_id)
    count = job.export(args.out)
    print(f"{count} results written to {args.out}")
    return 0
