"""Consoles for the CLI's human-readable output."""

from __future__ import annotations

from rich.console import Console

__all__ = ["make_console"]


def make_console(*, stderr: bool = False) -> Console:
    """A rich console; piped output (logs, CI, ``| grep``) keeps whole lines
    instead of wrapping at 80 columns."""
    console = Console(stderr=stderr)
    return console if console.is_terminal else Console(stderr=stderr, width=200)
