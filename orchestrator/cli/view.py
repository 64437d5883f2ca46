"""``verifleet view`` (results in the browser) and ``verifleet report`` (one HTML file).

Both take result files (Parquet, JSON, JSON Lines, CSV) and, with ``--redis``,
fleet job ids; ``view`` follows a running job live.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from verifleet.store import ResultStore
    from verifleet.viewer import Run

__all__ = ["register"]

_SOURCES_HELP = (
    "result files (.parquet, .json, .jsonl, .csv) or, with --redis, fleet job ids; "
    "an argument that is not an existing file is taken as a job id"
)

_VIEW_EPILOG = """\
examples:
  verifleet view demo-results.parquet                 # then open http://127.0.0.1:8600/
  verifleet view before.parquet after.parquet         # compare two runs
  verifleet view --compare original.json new.parquet  # open on the comparison (an original run too)
  verifleet view JOB_ID --redis redis://127.0.0.1:6379/0   # a running job, live
  verifleet view results.parquet --benchmark bench.yaml   # result pages show template sources
  verifleet view results.parquet --host 0.0.0.0 --token s3cret   # reachable by others
"""


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sources", nargs="+", metavar="RESULTS", help=_SOURCES_HELP)
    parser.add_argument(
        "--redis", metavar="URL", help="Redis URL for job ids (default: $VERIFLEET_REDIS_URL)"
    )
    parser.add_argument("--title", default="", help="text shown in the page header")
    parser.add_argument(
        "--benchmark",
        action="append",
        default=[],
        metavar="FILE",
        type=Path,
        help="the benchmark the results come from (repeatable): result pages then show "
        "each answer template's source, which result files do not hold (a fleet "
        "job's pages show its own benchmark's)",
    )


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``view`` and ``report`` sub-commands."""
    view = commands.add_parser(
        "view",
        description=(
            "Serve a web page over result files or fleet jobs: pass rates with\n"
            "confidence intervals, score distributions, a rubric heat map, error and\n"
            "override counts, a searchable question table, each result in full, and a\n"
            "comparison of two runs. A running job's pages update live. Binds to\n"
            "127.0.0.1 unless --host says otherwise; any other address needs a token."
        ),
        epilog=_VIEW_EPILOG,
    )
    _common(view)
    view.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    view.add_argument("--port", type=int, default=8600, help="port (default 8600)")
    view.add_argument(
        "--token",
        help="require this token (?token= in the URL); generated when --host is not a "
        "loopback address and none is given",
    )
    view.add_argument(
        "--compare",
        action="store_true",
        help="open on the comparison of the two RESULTS (exactly two: e.g. the original "
        "framework's JSON export and a verifleet run of the same benchmark)",
    )
    view.set_defaults(handler=_view)

    report = commands.add_parser(
        "report",
        description="Write one HTML file (no server, no network) with the overview "
        "and the question table of each run, for sharing.",
        epilog="examples:\n  verifleet report results.parquet --out report.html\n"
        "  verifleet report before.parquet after.parquet --out compare.html --title 'v2 vs v1'\n"
        "  verifleet report results.parquet --benchmark bench.yaml --out report.html",
    )
    _common(report)
    report.add_argument("--out", type=Path, required=True, help="the .html file to write")
    report.set_defaults(handler=_report)


def _load(args: argparse.Namespace) -> list[Run]:
    # Imported here: the viewer pulls in FastAPI, which other commands do not need,
    # and `view --help` needs none of these.
    import redis

    from verifleet.schemas import ConfigError
    from verifleet.store import ResultStore
    from verifleet.viewer import FileRun, JobRun

    from .._fleet.job import redis_url_from

    runs: list[Run] = []
    store: ResultStore | None = None
    for source in args.sources:
        started = time.perf_counter()
        path = Path(source)
        run: Run
        if path.exists():
            run = FileRun(path)
        else:
            if store is None:
                try:
                    store = ResultStore.from_url(redis_url_from(args.redis))
                except ConfigError as exc:
                    raise ConfigError(f"{source}: no such file, and {exc}") from None
            try:
                run = JobRun(store, source)
            except redis.RedisError as exc:
                raise ConfigError(f"{source}: no such file, and Redis failed: {exc}") from None
        took = time.perf_counter() - started
        print(f"{run.name}: {len(run.index):,} results ({took:.1f} s)", file=sys.stderr)
        runs.append(run)
    for path in args.benchmark:
        sources = _template_sources(path)
        for run in runs:
            run.templates.add(sources, f"benchmark {path}")
    return runs


def _template_sources(path: Path) -> dict[str, str]:
    """The answer templates of the benchmark at ``path`` by template id.

    Raises:
        ConfigError: the benchmark cannot be read (names the file and why).
    """
    from verifleet.schemas import BenchmarkLoadError, ConfigError, load_benchmark
    from verifleet.viewer import template_sources

    try:
        # Not compiled: the sources are only shown, and compiling runs template code.
        benchmark = load_benchmark(path, validate_templates=False)
    except (BenchmarkLoadError, OSError) as exc:
        raise ConfigError(f"--benchmark {path}: {exc}") from None
    return template_sources(benchmark)


def _view(args: argparse.Namespace) -> int:
    from verifleet.schemas import ConfigError
    from verifleet.viewer import bind_socket, check_binding, serve
    from verifleet.web import is_loopback

    if args.compare and len(args.sources) != 2:
        raise ConfigError(
            f"--compare needs exactly two RESULTS (before and after), got {len(args.sources)}"
        )
    token = args.token
    if not token and not is_loopback(args.host):
        token = secrets.token_urlsafe(16)
    check_binding(args.host, token)
    # The port first: a taken one fails now, before loading and before any URL.
    sock = bind_socket(args.host, args.port)
    runs = _load(args)
    shown = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
    url = f"http://{shown}:{args.port}/" + (f"?token={token}" if token else "")
    if args.compare:
        url += "#/compare?a=0&b=1"
    if token and not args.token:
        print(f"bound to {args.host}: generated a token for this session", file=sys.stderr)
    print(f"verifleet viewer: open {url}  (Ctrl-C to stop)", file=sys.stderr, flush=True)
    serve(runs, host=args.host, port=args.port, token=token, title=args.title, sock=sock)
    return 0


def _report(args: argparse.Namespace) -> int:
    from verifleet.viewer import write_report

    runs = _load(args)
    size = write_report(runs, args.out, title=args.title)
    print(f"wrote {args.out} ({size / 1e6:.1f} MB); open it in a browser", file=sys.stderr)
    return 0
