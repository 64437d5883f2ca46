"""``verifleet reward``: add ``reward`` and the verdict fields to every rollout of a
JSON Lines file.

Each line is a verify request (the ``POST /verify`` body: ``responses_create_params``
and ``response``, or the plain form). Output lines are the input lines plus
``reward``, ``verify_result``, ``verify_granular_result``, ``reward_components``,
``verification_error`` and ``rollout_line``, in input order. Without ``--redis``
the rollouts are scored in this process; with it, by the fleet's workers. Either
way the rewards are the same. Re-running with the same ``--out`` resumes.
Malformed lines are reported with their line numbers (and listed in
``OUT.errors.jsonl``) and skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from verifleet.errors import ConfigError

from ._reward_args import add_reward_arguments, reward_setup
from ._sandbox import start_sandbox

if TYPE_CHECKING:
    from verifleet.reward import LineError

# The reward stack and Redis are imported by the handler: `--help` must not pay for them.

__all__ = ["register"]

_EPILOG = """\
examples:
  verifleet reward rollouts.jsonl --benchmark bench.yaml --parsing openai:gpt-4.1-mini \\
      --out scored.jsonl
  verifleet reward rollouts.jsonl --benchmark bench.yaml --parsing openai:gpt-4.1-mini \\
      --reward-config reward.yaml --out scored.jsonl --redis redis://127.0.0.1:6379/0
"""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``reward`` sub-command."""
    parser = commands.add_parser(
        "reward",
        description=__doc__,
        epilog=_EPILOG,
    )
    parser.add_argument("rollouts", type=Path, help="rollouts, one JSON request per line")
    parser.add_argument("--benchmark", type=Path, required=True, help="benchmark file")
    add_reward_arguments(parser)
    parser.add_argument("--out", type=Path, required=True, help="scored rollouts (JSONL)")
    parser.add_argument(
        "--redis",
        metavar="URL",
        default=os.environ.get("VERIFLEET_REDIS_URL"),
        help="score on the fleet through this Redis (default: $VERIFLEET_REDIS_URL; "
        "unset: in this process)",
    )
    parser.add_argument("--concurrency", type=int, default=8, help="local mode: rollouts at once")
    parser.add_argument(
        "--stall-timeout",
        type=float,
        default=600.0,
        help="fleet mode: give up after this many seconds without a verdict",
    )
    parser.set_defaults(handler=_reward)


def _report_line(entry: LineError) -> None:
    print(f"line {entry.line}: skipped: {entry.message}", file=sys.stderr, flush=True)


def _reward(args: argparse.Namespace) -> int:
    import redis

    from verifleet.reward import score_rollouts_fleet, score_rollouts_local
    from verifleet.store import mask_password

    if not args.rollouts.is_file():
        raise ConfigError(f"{args.rollouts}: no such rollouts file")
    start_sandbox(args)
    with contextlib.ExitStack() as stack:
        scorer = reward_setup(args, stack, redis_url=args.redis)
        if args.redis:
            try:
                report = score_rollouts_fleet(
                    args.rollouts,
                    args.out,
                    scorer,
                    args.redis,
                    stall_timeout=args.stall_timeout,
                    on_error=_report_line,
                )
            except redis.ConnectionError as exc:
                raise ConfigError(
                    f"cannot reach Redis at {mask_password(args.redis)}: {exc}"
                ) from None
        else:
            report = score_rollouts_local(
                args.rollouts, args.out, scorer, concurrency=args.concurrency, on_error=_report_line
            )
    where = "on the fleet" if args.redis else "locally"
    print(
        f"{args.rollouts}: {report.scored} rollouts scored {where}, "
        f"{report.already_done} already in {args.out}, {len(report.errors)} malformed lines skipped"
    )
    return 1 if report.errors else 0
