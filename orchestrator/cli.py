"""The ``verifleet`` command line (placeholder until the run command lands)."""

from __future__ import annotations

import argparse
import sys

from verifleet import __version__


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one sub-command per action."""
    parser = argparse.ArgumentParser(prog="verifleet", description=__doc__)
    parser.add_argument("--version", action="version", version=f"verifleet {__version__}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``verifleet`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    return 0
