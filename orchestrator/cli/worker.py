"""``verifleet worker`` and ``verifleet flower``.

``worker`` starts a Celery worker with the threads pool (many LLM calls at once in
one process; scale past ~600 tasks/s with more processes, not more threads). It
is equivalent to ``celery -A verifleet.workers.app worker -P threads -c N -Q verifleet``.

``flower`` starts Flower against the same broker with a bounded task history and,
when credentials are configured, basic auth.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from verifleet.store import DEFAULT_QUEUE

from .._fleet.job import redis_url_from
from ._sandbox import add_sandbox_argument, start_sandbox

__all__ = ["flower_command", "register"]


def register(commands: Any) -> None:
    """Add ``worker`` and ``flower``."""
    worker = commands.add_parser(
        "worker",
        help="start a worker on this machine",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    worker.add_argument("--redis", metavar="URL", help="Redis URL (default: $VERIFLEET_REDIS_URL)")
    worker.add_argument("--concurrency", type=int, default=32, help="units at once (threads)")
    worker.add_argument("--queues", default=DEFAULT_QUEUE, help="comma-separated queues")
    worker.add_argument("--hostname", help="worker name (default: celery's)")
    worker.add_argument("--loglevel", default="INFO")
    add_sandbox_argument(worker)
    worker.set_defaults(handler=_worker)

    flower = commands.add_parser("flower", help="start Flower for the fleet")
    flower.add_argument("--redis", metavar="URL", help="Redis URL (default: $VERIFLEET_REDIS_URL)")
    flower.add_argument("--port", type=int, default=5555)
    flower.add_argument("--address", default="127.0.0.1")
    flower.add_argument(
        "--basic-auth",
        default=os.environ.get("VERIFLEET_FLOWER_AUTH"),
        help="user:password (default: $VERIFLEET_FLOWER_AUTH); strongly advised off-localhost",
    )
    flower.add_argument("--max-tasks", type=int, default=10000, help="tasks kept in memory")
    flower.set_defaults(handler=_flower)


def _worker(args: argparse.Namespace) -> int:
    # The app reads its settings from the environment when it is imported.
    os.environ["VERIFLEET_REDIS_URL"] = redis_url_from(args.redis)
    # Refuse to consume tasks on a machine that lacks the configured isolation.
    start_sandbox(args)
    from verifleet.workers.app import app

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


def flower_command(
    redis_url: str, *, port: int, address: str, basic_auth: str | None, max_tasks: int
) -> list[str]:
    """The ``celery flower`` command line ``verifleet flower`` runs."""
    cmd = [
        sys.executable,
        "-m",
        "celery",
        "-b",
        redis_url,
        "flower",
        f"--port={port}",
        f"--address={address}",
        f"--max_tasks={max_tasks}",
    ]
    if basic_auth:
        cmd.append(f"--basic_auth={basic_auth}")
    return cmd


def _flower(args: argparse.Namespace) -> int:
    cmd = flower_command(
        redis_url_from(args.redis),
        port=args.port,
        address=args.address,
        basic_auth=args.basic_auth,
        max_tasks=args.max_tasks,
    )
    os.execv(cmd[0], cmd)
    return 0  # pragma: no cover - execv does not return
