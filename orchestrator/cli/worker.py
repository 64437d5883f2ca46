"""``verifleet worker`` and ``verifleet flower``.

``worker`` starts a Celery worker with the threads pool (many LLM calls at once in
one process; scale past ~600 tasks/s with more processes, not more threads). The
Celery worker runs as a child of a small supervisor that replaces it when it dies
of a signal (OOM, a crash) or sends no heartbeat for --stuck-after seconds (a
thread stuck in host code); its units go back to the queue and run once more.
With --no-supervise the command is equivalent to
``celery -A verifleet.workers.app worker -P threads -c N -Q verifleet``.

A worker writes the result shards of ``submit --results-to`` jobs only under its
``--results-root`` folders or prefixes (``$VERIFLEET_RESULTS_ROOTS``), and only for
jobs of the queues it serves; other jobs' results stay in Redis.

``flower`` starts Flower against the same broker with a bounded task history and
basic auth; see ``verifleet flower --help``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from verifleet.errors import ConfigError

from ._sandbox import add_sandbox_argument, start_sandbox

if TYPE_CHECKING:
    from verifleet.results import ResultsRoots
    from verifleet.store import RedisTarget

# verifleet.store (Redis, Celery's kombu) is imported by the handlers: `--help`
# must not pay for it. This is verifleet.store.DEFAULT_QUEUE (a test checks it).
DEFAULT_QUEUE = "verifleet"


def redis_url_from(url: str | None) -> str:
    """As :func:`verifleet.orchestrator._fleet.job.redis_url_from`, imported on use."""
    from .._fleet.job import redis_url_from as resolve

    return resolve(url)


def _target(url: str) -> RedisTarget:
    from verifleet.store import RedisTarget

    return RedisTarget.parse(url)


__all__ = [
    "AUTH_ENV",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_STUCK_AFTER",
    "STUCK_AFTER_ENV",
    "flower_command",
    "register",
]

#: Threads of a worker process: enough that the fleet-wide adaptive window, not
#: the thread count, decides how many calls an endpoint gets.
DEFAULT_CONCURRENCY = 128

#: Seconds without a heartbeat after which the supervisor replaces the worker process.
DEFAULT_STUCK_AFTER = 60.0

#: The environment variable for --stuck-after.
STUCK_AFTER_ENV = "VERIFLEET_STUCK_AFTER"

#: The environment variable with Flower's basic-auth credentials (user:password).
AUTH_ENV = "VERIFLEET_FLOWER_AUTH"

_FLOWER_DOC = """\
Start Flower (the Celery dashboard) against the fleet's broker, with a bounded task
history. Flower shows every task's arguments and can shut workers down, so it never
starts without authentication: give --basic-auth USER:PASSWORD (or set
VERIFLEET_FLOWER_AUTH), configure Flower's OAuth (FLOWER_AUTH, FLOWER_AUTH_PROVIDER),
or pass --no-auth to run it open on purpose. Serve it behind a TLS proxy when it
listens beyond localhost: basic auth over plain HTTP sends the password in clear.

The Redis URL may carry a password (redis://:PASSWORD@host:6379/0) and TLS
(rediss://...?ssl_ca_certs=/path/ca.pem, or VERIFLEET_REDIS_SSL_* variables).
"""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``worker`` and ``flower``."""
    worker = commands.add_parser(
        "worker",
        description=__doc__,
        epilog="examples:\n  verifleet worker --redis redis://10.0.0.5:6379/0\n"
        "  verifleet worker --concurrency 64 --hostname gpu-box-1",
    )
    worker.add_argument("--redis", metavar="URL", help="Redis URL (default: $VERIFLEET_REDIS_URL)")
    worker.add_argument(
        "--concurrency",
        type=int,
        default=DEFAULT_CONCURRENCY,
        help=f"most units at once (threads; default {DEFAULT_CONCURRENCY}): the fleet-wide "
        "adaptive window "
        "of each endpoint decides how many of them call it",
    )
    worker.add_argument(
        "--queues",
        default=DEFAULT_QUEUE,
        help=f"comma-separated queues this worker serves and feeds from their schedules "
        f"(default {DEFAULT_QUEUE}); a tenant's jobs go to theirs with `submit --queue`",
    )
    worker.add_argument(
        "--results-root",
        action="append",
        default=None,
        metavar="PATH_OR_URL",
        help="a folder or object-store prefix (s3://, gs://, az://...) under which this "
        "worker writes the shards of jobs submitted with --results-to; repeatable "
        "(default: $VERIFLEET_RESULTS_ROOTS, comma-separated). Jobs whose location is "
        "elsewhere, or on another scheme (ftp://, http://...), keep their results in "
        "Redis; with no root, none are written",
    )
    worker.add_argument("--hostname", help="worker name (default: celery's)")
    worker.add_argument("--loglevel", default="INFO")
    worker.add_argument(
        "--stuck-after",
        type=float,
        default=None,
        metavar="SECONDS",
        help="kill and replace the worker process when it sends no heartbeat for this long "
        f"(default: ${STUCK_AFTER_ENV} or {DEFAULT_STUCK_AFTER:.0f})",
    )
    worker.add_argument(
        "--no-supervise",
        action="store_true",
        help="run the Celery worker in this process, with no supervisor to replace it",
    )
    add_sandbox_argument(worker)
    worker.set_defaults(handler=_worker)

    flower = commands.add_parser(
        "flower",
        description=_FLOWER_DOC,
        epilog="example:\n  verifleet flower --basic-auth admin:s3cret --port 5555",
    )
    flower.add_argument("--redis", metavar="URL", help="Redis URL (default: $VERIFLEET_REDIS_URL)")
    flower.add_argument("--port", type=int, default=5555)
    flower.add_argument("--address", default="127.0.0.1")
    flower.add_argument(
        "--basic-auth",
        metavar="USER:PASSWORD",
        default=os.environ.get(AUTH_ENV) or os.environ.get("FLOWER_BASIC_AUTH"),
        help=f"basic auth, comma-separated for several users (default: ${AUTH_ENV}, "
        "else $FLOWER_BASIC_AUTH); passed to Flower through its environment, not its "
        "command line",
    )
    flower.add_argument(
        "--no-auth",
        action="store_true",
        help="start Flower without any authentication (anyone who reaches the port sees "
        "every task's arguments and can shut workers down)",
    )
    flower.add_argument("--max-tasks", type=int, default=10000, help="tasks kept in memory")
    flower.set_defaults(handler=_flower)


def _worker(args: argparse.Namespace) -> int:
    from verifleet.workers._supervisor import start_beating

    if start_beating() or args.no_supervise:
        return _celery_worker(args)
    return _supervise(args)


def _stuck_after(args: argparse.Namespace) -> float:
    """--stuck-after, else its environment variable, else the default.

    Raises:
        ConfigError: not a positive number.
    """
    raw = args.stuck_after
    if raw is None:
        text = os.environ.get(STUCK_AFTER_ENV) or str(DEFAULT_STUCK_AFTER)
        try:
            raw = float(text)
        except ValueError:
            raise ConfigError(f"{STUCK_AFTER_ENV}={text!r}: not a number of seconds") from None
    if not raw > 0:
        raise ConfigError(f"--stuck-after / {STUCK_AFTER_ENV}: {raw} is not a positive number")
    return float(raw)


def _supervise(args: argparse.Namespace) -> int:
    """Run the Celery worker as a supervised child process (see
    :mod:`verifleet.workers._supervisor`)."""
    from verifleet.sandbox import default_pool
    from verifleet.store import Liveness, ResultStore
    from verifleet.workers._supervisor import Supervisor

    stuck_after = _stuck_after(args)
    _results_roots(args)  # a bad root stops the command here, not in the child
    # Fail at once, as the worker would, on a machine without the isolation;
    # the supervisor itself runs no benchmark code, so its executor goes.
    start_sandbox(args)
    default_pool().close()
    url = redis_url_from(args.redis)
    _target(url).check()
    # The URL travels in the environment, not the command line (ps shows that).
    env = dict(os.environ, VERIFLEET_REDIS_URL=url)
    command = [sys.executable, "-m", "verifleet", "worker", "--concurrency", str(args.concurrency)]
    command += ["--queues", args.queues, "--loglevel", args.loglevel]
    if args.hostname:
        command += ["--hostname", args.hostname]
    for root in args.results_root or []:
        command += ["--results-root", root]
    if args.sandbox:
        command += ["--sandbox", args.sandbox]

    def forget(owner: str) -> None:
        # The prefix, as the workers read it: $VERIFLEET_PREFIX, else vf.
        Liveness(ResultStore.from_url(url)).forget(owner)

    logging.basicConfig(level=logging.WARNING, format="[%(asctime)s: %(levelname)s] %(message)s")
    return Supervisor(command, env, stuck_after=stuck_after, forget_owner=forget).run()


def _results_roots(args: argparse.Namespace) -> ResultsRoots:
    """The worker's results roots (:class:`~verifleet.results.ResultsRoots`).

    Raises:
        ConfigError: a root is empty or on a scheme off the allow-list.
    """
    from verifleet.results import ResultsRoots

    try:
        return ResultsRoots.from_settings(args.results_root)
    except ValueError as exc:
        raise ConfigError(f"--results-root: {exc}") from None


def _celery_worker(args: argparse.Namespace) -> int:
    roots = _results_roots(args)
    # Refuse to consume tasks on a machine that lacks the configured isolation.
    start_sandbox(args)
    url = redis_url_from(args.redis)
    # Celery retries a refused broker connection forever; a wrong password, CA or
    # host should stop the worker at once with one clear line instead.
    _target(url).check()
    # The app reads its settings from the environment when it is imported.
    os.environ["VERIFLEET_REDIS_URL"] = url
    from verifleet.results import start_drainer
    from verifleet.workers.app import app

    # Results of jobs submitted with --results-to leave Redis from here: the
    # drainer writes Parquet, which the workers' own modules never import.
    # Only jobs of the queues served here, and only under the operator's roots.
    queues = [q.strip() for q in args.queues.split(",") if q.strip()]
    start_drainer(app.conf.verifleet_settings, roots=roots, queues=queues)
    argv = [
        "worker",
        "-P",
        "threads",
        "-c",
        str(args.concurrency),
        "-Q",
        args.queues,
        "--loglevel",
        args.loglevel,
    ]
    if args.hostname:
        argv += ["-n", args.hostname]
    app.worker_main(argv)
    return 0


def _check_basic_auth(basic_auth: str) -> None:
    for pair in basic_auth.split(","):
        user, sep, password = pair.partition(":")
        if not (user and sep and password):
            # The value itself is a secret: say what is wrong, not what it is.
            raise ConfigError(
                f"--basic-auth / ${AUTH_ENV}: expected user:password (comma-separated for "
                "several users); an entry has no user or no password"
            )


def flower_command(
    redis_url: str,
    *,
    port: int,
    address: str,
    basic_auth: str | None,
    max_tasks: int,
    no_auth: bool = False,
    environ: Mapping[str, str] | None = None,
) -> tuple[list[str], dict[str, str]]:
    """The ``celery flower`` command line ``verifleet flower`` runs, and its
    environment: the broker URL and the basic-auth credentials travel there, not in
    the arguments, which any local user can read with ``ps``.

    Flower's own OAuth (``FLOWER_AUTH`` with ``FLOWER_AUTH_PROVIDER`` in
    ``environ``) counts as authentication too.

    Raises:
        ConfigError: no authentication is configured and ``no_auth`` is False, or
            ``basic_auth`` is not ``user:password[,user:password...]``.
    """
    env = dict(os.environ if environ is None else environ)
    oauth = bool(env.get("FLOWER_AUTH") and env.get("FLOWER_AUTH_PROVIDER"))
    if basic_auth:
        _check_basic_auth(basic_auth)
        env["FLOWER_BASIC_AUTH"] = basic_auth
    elif not (oauth or no_auth):
        raise ConfigError(
            "Flower shows every task's arguments and can shut workers down: give "
            f"--basic-auth USER:PASSWORD (or set {AUTH_ENV}), or pass --no-auth to run "
            "it open on purpose"
        )
    else:
        # --no-auth means none: a stray FLOWER_BASIC_AUTH would contradict the log line.
        env.pop("FLOWER_BASIC_AUTH", None)
    env["VERIFLEET_REDIS_URL"] = redis_url
    cmd = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "verifleet.orchestrator._fleet.flower_app",
        "flower",
        f"--port={port}",
        f"--address={address}",
        f"--max_tasks={max_tasks}",
    ]
    return cmd, env


def _flower(args: argparse.Namespace) -> int:
    url = redis_url_from(args.redis)
    cmd, env = flower_command(
        url,
        port=args.port,
        address=args.address,
        basic_auth=args.basic_auth,
        max_tasks=args.max_tasks,
        no_auth=args.no_auth,
    )
    _target(url).check()  # a wrong password or CA fails here, in one line
    if args.no_auth and not args.basic_auth:
        print(
            "verifleet flower: WARNING: running without authentication (--no-auth)",
            file=sys.stderr,
            flush=True,
        )
    os.execve(cmd[0], cmd, env)
    return 0  # pragma: no cover - execve does not return
