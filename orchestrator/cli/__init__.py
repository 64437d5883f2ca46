"""The ``verifleet`` command line.

Every sub-command lives in its own module and registers itself on the parser;
``main`` turns every deliberate verifleet error into one clear line on stderr and
an exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys

import redis

from verifleet import __version__
from verifleet.schemas import VerifleetError

from . import fleet, llm, reward, run, serve, view, worker

__all__ = ["build_parser", "main"]

_COMMANDS = (run, fleet, worker, llm, serve, reward, view)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one sub-command per action."""
    parser = argparse.ArgumentParser(
        prog="verifleet",
        description="Verify LLM answers with templates and rubrics, locally or on a fleet.",
    )
    parser.add_argument("--version", action="version", version=f"verifleet {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _COMMANDS:
        module.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``verifleet`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    level = {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = args.handler(args)
    except VerifleetError as exc:
        print(f"verifleet {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except redis.RedisError as exc:
        # Redis lost mid-command (the commands check it once up front): one line, the
        # error names the host, never the URL with its password.
        print(f"verifleet {args.command}: error: Redis: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"verifleet {args.command}: interrupted", file=sys.stderr)
        return 130
    return code
