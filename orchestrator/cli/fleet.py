"""Fleet commands: ``submit``, ``jobs``, ``status``, ``watch``, ``cancel``, ``resume``,
``delete``, ``results``. Each takes ``--redis URL`` (default ``VERIFLEET_REDIS_URL``).

Heavy modules (rich's live display, the store, Celery's broker) are imported by
the handlers, so ``--help`` stays instant.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ._cost import cost_text, job_cost, set_budget
from ._jobflags import add_job_arguments, preflight, select
from ._sandbox import add_sandbox_argument
from .config import add_config_arguments
from .worker import DEFAULT_QUEUE

if TYPE_CHECKING:
    from rich.console import Group

    from verifleet.results.stats import Interval
    from verifleet.store import JobCost, JobProgress, ResultStore

    from .._fleet.job import Job

__all__ = ["parse_duration", "progress_view", "rate_of", "register"]

_R = "--redis redis://127.0.0.1:6379/0"

# command -> (description, example lines)
_DOCS: dict[str, tuple[str, str]] = {
    "jobs": (
        "List the jobs on this Redis, newest first, with status and progress. Jobs "
        "whose --ttl has run out are deleted first.",
        f"verifleet jobs {_R}\n  verifleet jobs --limit 100",
    ),
    "status": (
        "Print a job's progress once: units done, failed and in flight, the rate "
        "since its first unit started, an ETA, and pass rates per model pair.",
        "verifleet status 20260101-120000-ab12cd",
    ),
    "watch": (
        "Show a job's progress live (rate over the last minute, ETA, pass rates) "
        "until it is done or cancelled.",
        "verifleet watch 20260101-120000-ab12cd --interval 5",
    ),
    "cancel": (
        "Stop new work on a job: queued units are dropped by the workers, units in "
        "flight finish. `verifleet resume` restarts it.",
        "verifleet cancel 20260101-120000-ab12cd",
    ),
    "resume": (
        "Re-enqueue the units of a job that have no results (after a cancel, or "
        "units lost with Redis). --retry-errors also re-runs the units whose "
        "results have errors: their old results are replaced, each stays stored once.",
        "verifleet resume 20260101-120000-ab12cd\n"
        "  verifleet resume 20260101-120000-ab12cd --retry-errors",
    ),
    "delete": (
        "Remove a job and all its results from Redis. A queued or running job is "
        "refused unless --force (which cancels it first). --expired deletes every "
        "job whose --ttl has run out.",
        "verifleet delete 20260101-120000-ab12cd\n  verifleet delete --expired",
    ),
}


def _redis_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--redis", metavar="URL", help="Redis URL (default: $VERIFLEET_REDIS_URL)")


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``30m``, ``12h`` or ``7d`` as seconds.

    Raises:
        argparse.ArgumentTypeError: anything else, or a duration of zero.
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(
            f"expected a duration such as 3600, 30m, 12h or 7d, got {text!r}"
        )
    seconds = (
        float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
    )
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"a TTL must be longer than zero, got {text!r}")
    return seconds


_SUBMIT_DOC = """Validate everything first (templates, models, rubrics), check that every model
answers one test call (--no-preflight skips it), store the benchmark and config
once, and enqueue one task per unit. Nothing is enqueued when anything is wrong.
Each template is checked statically (syntax and the sandbox's guard); the workers
compile it for its first unit, and one that does not compile fails its own
questions with the error in their results. --strict compiles every template first.

examples:
  verifleet submit bench.yaml --answering openai:gpt-4.1-mini --parsing openai:gpt-4.1
  verifleet submit bench.yaml --config config.yaml --limit 20 --ttl 7d
  verifleet submit bench.yaml --config config.yaml --questions 'geo-*'
"""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the fleet sub-commands."""
    submit = commands.add_parser(
        "submit",
        description=_SUBMIT_DOC,
    )
    submit.add_argument("benchmark", type=Path, help="benchmark file (.yaml, .json or .jsonld)")
    add_config_arguments(submit)
    add_job_arguments(submit)
    _redis_arg(submit)
    submit.add_argument(
        "--job-id",
        help="choose the job id (default: generated): letters, digits, '.', '_' and '-', "
        "at most 128, starting with a letter or digit; an id an existing job holds is "
        "refused (`verifleet resume ID` continues that job)",
    )
    submit.add_argument(
        "--ttl",
        type=parse_duration,
        metavar="DURATION",
        help="delete the job and its results this long after it finishes (e.g. 7d, 12h); "
        "expired jobs are removed by the next `jobs`, `submit` or `delete --expired`",
    )
    submit.add_argument("--trust-callables", action="store_true", help="allow pickled callables")
    submit.add_argument(
        "--strict",
        action="store_true",
        help="compile every template before anything is queued, and reject the whole job when "
        "one does not compile or is refused (default: templates are checked statically, "
        "and a broken one fails its own questions, with its error in their results)",
    )
    submit.add_argument(
        "--queue",
        type=_queue_name,
        default=DEFAULT_QUEUE,
        help=f"the queue whose workers run the job (default {DEFAULT_QUEUE}; start them with "
        "`verifleet worker --queues NAME`): a tenant's untrusted benchmarks on workers of "
        "their own",
    )
    submit.add_argument(
        "--weight",
        type=_weight,
        default=1.0,
        help="the job's share of its queue's workers relative to the other jobs in flight "
        "(default 1: a job of weight 3 gets three units started for each one of a job of "
        "weight 1)",
    )
    submit.add_argument(
        "--results-to",
        metavar="URL",
        help="move finished results out of Redis into Parquet shards under URL/JOB_ID/ while "
        "the job runs (a path every worker sees, or s3://, gs://, az:// URLs; other schemes "
        "are refused): Redis then holds only what is in flight; `verifleet results` reads "
        "both. Workers write only under their operator's `worker --results-root`",
    )
    add_sandbox_argument(submit)
    submit.set_defaults(handler=_submit)

    jobs = _command(commands, "jobs")
    _redis_arg(jobs)
    jobs.add_argument("--limit", type=int, default=20, help="most jobs listed (default 20)")
    jobs.set_defaults(handler=_jobs)

    for name, handler in (
        ("status", _status),
        ("watch", _watch),
        ("cancel", _cancel),
        ("resume", _resume),
    ):
        cmd = _command(commands, name)
        cmd.add_argument("job_id")
        _redis_arg(cmd)
        if name == "watch":
            cmd.add_argument("--interval", type=float, default=2.0, help="seconds between updates")
        if name == "resume":
            cmd.add_argument(
                "--max-cost",
                type=float,
                metavar="USD",
                help="the job's new budget (a job stopped by its budget goes on up to it)",
            )
            cmd.add_argument(
                "--retry-errors",
                action="store_true",
                help="also run again the units whose results have errors (their old "
                "results are replaced; each result stays stored once)",
            )
        cmd.set_defaults(handler=handler)

    delete = _command(commands, "delete")
    delete.add_argument("job_id", nargs="?", help="the job to delete")
    _redis_arg(delete)
    delete.add_argument(
        "--force", action="store_true", help="delete a queued or running job (cancels it first)"
    )
    delete.add_argument(
        "--expired", action="store_true", help="delete every job whose --ttl has run out"
    )
    delete.set_defaults(handler=_delete)

    results = commands.add_parser(
        "results",
        description="Stream every stored result of a job into one file (format from the "
        "extension), whether the job is finished or not.",
        epilog="example:\n  verifleet results 20260101-120000-ab12cd --out results.parquet",
    )
    results.add_argument("job_id")
    results.add_argument("--out", type=Path, required=True, help=".parquet, .json, .jsonl or .csv")
    _redis_arg(results)
    results.set_defaults(handler=_results)


def _command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], name: str
) -> argparse.ArgumentParser:
    description, examples = _DOCS[name]
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        description=description,
        epilog=f"example{'s' if chr(10) in examples else ''}:\n  {examples}",
    )
    return parser


def _weight(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _queue_name(text: str) -> str:
    if not text or any(c.isspace() or c == "," for c in text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a queue name (no spaces or commas)")
    return text


def _url(args: argparse.Namespace) -> str:
    """The Redis URL of ``--redis`` / ``VERIFLEET_REDIS_URL``, checked with one PING so
    that a wrong password, CA or host is one clear line, not a traceback.

    Raises:
        ConfigError: no URL, or a malformed one.
        RedisAccessError: Redis is unreachable or refuses the password or TLS.
    """
    from verifleet.store import RedisTarget

    from .._fleet.job import redis_url_from

    url = redis_url_from(args.redis)
    RedisTarget.parse(url).check()
    return url


def _store(args: argparse.Namespace) -> ResultStore:
    from verifleet.store import ResultStore

    return ResultStore.from_url(_url(args))


def _progress(store: ResultStore, job_id: str) -> JobProgress:
    from verifleet.schemas import ConfigError

    try:
        return store.progress(job_id)
    except KeyError:
        raise ConfigError(f"no job {job_id!r} (see `verifleet jobs`)") from None


def _purge_expired(store: ResultStore) -> list[str]:
    """Delete the jobs whose TTL ran out; their ids."""
    expired = store.expired_jobs()
    for job_id in expired:
        store.delete_job(job_id)
    return expired


def _submit(args: argparse.Namespace) -> int:
    from verifleet.errors import JobRejectedError
    from verifleet.results import location_problem
    from verifleet.schemas import load_benchmark
    from verifleet.store import Broker, ResultStore, mask_password

    from .._fleet.submit import check_job, job_id_refusal, submit_job
    from ._console import make_console
    from ._sandbox import start_sandbox
    from .config import build_config

    url = _url(args)
    # The job id and the results location first: no template check or model call
    # is made for a job that cannot be stored.
    early = [location_problem(args.results_to)] if args.results_to is not None else []
    if args.job_id is not None:
        early.append(job_id_refusal(ResultStore.from_url(url), args.job_id))
    if any(early):
        raise JobRejectedError([p for p in early if p])
    start_sandbox(args)  # templates and callable traits are checked in sandbox executors
    # A broken template fails its own questions (or, with --strict, rejects
    # the job), as `verifleet run` does.
    benchmark = load_benchmark(
        args.benchmark, trust_callables=args.trust_callables, validate_templates=False
    )
    benchmark = select(benchmark, args)
    config = build_config(args)
    # The job's own problems first (no network): a broken job is rejected
    # listing them, whatever state its models are in. Each template is
    # checked once, in parallel: statically (the workers compile it for its
    # first unit anyway), or compiled with --strict; submit_job uses this check.
    checked = check_job(benchmark, config, compile_templates=args.strict)
    problems = checked.problems + (checked.failing if args.strict else [])
    if problems:
        raise JobRejectedError(problems)
    preflight(config, args, make_console(stderr=True))
    store = ResultStore.from_url(url)
    _purge_expired(store)
    broker = Broker(url, queue=args.queue)
    try:
        report = submit_job(
            benchmark,
            config,
            store=store,
            broker=broker,
            job_id=args.job_id,
            strict=args.strict,
            weight=args.weight,
            results_to=args.results_to,
            checked=checked,
        )
    finally:
        broker.close()
    if args.ttl is not None:
        store.set_ttl(report.job_id, args.ttl)
    if config.max_cost_usd is not None:
        set_budget(store, report.job_id, config.max_cost_usd)
    for problem in report.failing_questions:
        print(f"warning: {problem} (its results will record the error)", file=sys.stderr)
    if not report.templates_compiled and report.templates_checked:
        print(
            f"{report.templates_checked} templates checked statically (syntax and the "
            "sandbox's guard); the workers compile each for its first unit: one that does "
            "not compile fails its own questions, counted as failed in `verifleet status`, "
            "its error in the results (--strict compiles every template before queueing)",
            file=sys.stderr,
        )
    print(
        f"job {report.job_id}: {report.units} units enqueued ({report.expected_results} results "
        f"expected) on queue {broker.queue}, weight {args.weight:g}"
    )
    # The URL's password stays out of the terminal (and its scrollback).
    shown = mask_password(url)
    print(f"watch it:    verifleet watch {report.job_id} --redis {shown}")
    print(f"collect it:  verifleet results {report.job_id} --redis {shown} --out results.parquet")
    return 0


def _jobs(args: argparse.Namespace) -> int:
    from rich.table import Table

    from ._console import make_console

    store = _store(args)
    expired = _purge_expired(store)
    table = Table(title="jobs")
    for col in ("job", "name", "status", "created", "units done", "failed", "queue", "share"):
        table.add_column(col)
    jobs = store.list_jobs(limit=args.limit)
    failed = [p for p in jobs if p.error]
    for p in jobs:
        table.add_row(
            p.job_id,
            p.name,
            p.status.value,
            p.created,
            f"{p.done_units}/{p.total_units}",
            str(p.failed_units),
            p.queue,
            "-" if p.share is None else f"{p.share:.0%} (weight {p.weight:g})",
        )
    console = make_console()
    console.print(table)
    for p in failed:
        console.print(f"job {p.job_id} failed: {p.error}", markup=False, highlight=False)
    if expired:
        console.print(f"deleted {len(expired)} expired job(s): {', '.join(expired)}")
    return 0


def rate_of(p: JobProgress, now: datetime | None = None) -> float | None:
    """Units per second since the job's first unit started (until it finished);
    None before any unit is done."""
    if not p.started_at or not p.done_units:
        return None
    start = datetime.fromisoformat(p.started_at)
    end = (
        datetime.fromisoformat(p.finished_at)
        if p.finished_at
        else now or datetime.now(start.tzinfo)
    )
    seconds = (end - start).total_seconds()
    # Timestamps have whole seconds: a job done within one reports at least 1 s.
    return p.done_units / max(seconds, 1.0)


def progress_view(
    p: JobProgress,
    rate: float | None,
    cost: JobCost | None = None,
    intervals: dict[tuple[str, str], Interval | None] | None = None,
) -> Group:
    """The job's counts line and its per-pair pass-rate table; with
    ``intervals`` (by answering and parsing display names) a 95 % CI column."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    remaining = p.total_units - p.done_units
    if p.finished or remaining <= 0:
        eta = "-"
    elif rate:
        eta = _duration(remaining / rate)
    else:
        eta = "unknown (no unit done yet)"
    rate_text = f"{rate:.2f} units/s" if rate is not None else "- units/s"
    # Text, not markup: "[done]" would otherwise be read as a style tag and vanish.
    line = Text(
        f"job {p.job_id} [{p.status.value}]  done {p.done_units}/{p.total_units}  "
        f"failed {p.failed_units}  in flight {p.in_flight}  "
        f"rate {rate_text}  ETA {eta}"
    )
    share = "-" if p.share is None else f"{p.share:.0%}"
    line.append(f"\nqueue {p.queue}  weight {p.weight:g}  share {share}")
    if p.error:
        line.append(f"\nerror: {p.error}", style="bold red")
    if p.total_scenarios:
        line.append(
            f"\nscenarios {p.scenarios_done}/{p.total_scenarios}  "
            f"scenario errors {p.scenario_errors}"
        )
    if cost is not None:
        line.append("\n" + cost_text(p.job_id, cost))
    table = Table(title="pass rate so far")
    for col in ("answering", "parsing", "passed", "failed", "errors", "pass rate"):
        table.add_column(col)
    if intervals is not None:
        # Questions are the clusters, as in the end table of `verifleet run`.
        table.add_column("95% CI")
    for pair in p.pairs:
        pair_rate = "n/a" if pair.pass_rate is None else f"{pair.pass_rate:.1%}"
        cells = [
            pair.answering,
            pair.parsing,
            str(pair.passed),
            str(pair.failed),
            str(pair.errors),
            pair_rate,
        ]
        if intervals is not None:
            found = intervals.get((pair.answering, pair.parsing))
            cells.append("n/a" if found is None else f"{found.low:.1%}-{found.high:.1%}")
        table.add_row(*cells)
    return Group(line, table)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def _status(args: argparse.Namespace) -> int:
    from .._fleet.intervals import pair_intervals
    from ._console import make_console

    store = _store(args)
    progress = _progress(store, args.job_id)
    intervals = pair_intervals(store, args.job_id)
    cost = job_cost(store, args.job_id)
    make_console().print(progress_view(progress, rate_of(progress), cost, intervals))
    return 0


def _watch(args: argparse.Namespace) -> int:
    from rich.live import Live

    store = _store(args)
    first = _progress(store, args.job_id)
    samples = [(time.monotonic(), first.done_units)]
    with Live(progress_view(first, rate_of(first)), refresh_per_second=4) as live:
        while True:
            progress = _progress(store, args.job_id)
            now = time.monotonic()
            samples = [*samples[-30:], (now, progress.done_units)]
            (t0, d0), (t1, d1) = samples[0], samples[-1]
            # The recent rate once there is a window of samples, the job's average before.
            rate = (d1 - d0) / (t1 - t0) if t1 - t0 >= 5 else rate_of(progress)
            cost = job_cost(store, args.job_id)
            live.update(progress_view(progress, rate, cost))
            stopped = cost is not None and cost.stopped_at is not None
            if progress.finished or (stopped and not progress.in_flight):
                return 0
            time.sleep(args.interval)


def _job(args: argparse.Namespace) -> Job:
    from .._fleet.job import Job

    job = Job(args.job_id, _url(args))
    _progress(job.store, args.job_id)
    return job


def _cancel(args: argparse.Namespace) -> int:
    _job(args).cancel()
    print(
        f"job {args.job_id} cancelled: queued units will be dropped; `verifleet resume` restarts it"
    )
    return 0


def _resume(args: argparse.Namespace) -> int:
    job = _job(args)
    if args.max_cost is not None:
        set_budget(job.store, args.job_id, args.max_cost)
    failed = job.progress().failed_units if args.retry_errors else 0
    sent = job.resume(retry_errors=args.retry_errors)
    retried = f" ({failed} of them had errors and are run again)" if failed else ""
    print(f"job {args.job_id}: {sent} units re-enqueued{retried}")
    return 0


def _delete(args: argparse.Namespace) -> int:
    from verifleet.schemas import ConfigError
    from verifleet.store import JobStatus

    if args.expired:
        if args.job_id:
            raise ConfigError("delete: give a job id or --expired, not both")
        expired = _purge_expired(_store(args))
        print(f"deleted {len(expired)} expired job(s){': ' if expired else ''}{', '.join(expired)}")
        return 0
    if not args.job_id:
        raise ConfigError("delete: which job? give its id (see `verifleet jobs`) or --expired")
    job = _job(args)
    status = job.progress().status
    if status in (JobStatus.QUEUED, JobStatus.RUNNING):
        if not args.force:
            raise ConfigError(
                f"job {args.job_id} is {status.value}: cancel it first "
                "(`verifleet cancel`) or pass --force"
            )
        job.cancel()
    job.delete()
    print(f"job {args.job_id} deleted with all its results")
    return 0


def _results(args: argparse.Namespace) -> int:
    from verifleet.store import JobStatus

    job = _job(args)
    count = job.export(args.out)
    print(f"{count} results written to {args.out}")
    progress = job.progress()
    if progress.status is JobStatus.FAILED:
        # The export holds only what ran before the job was stopped.
        print(f"job {args.job_id} failed: {progress.error}", file=sys.stderr)
    return 0
