"""The ``--sandbox`` option of the commands that run benchmark code, and the
start-up check that refuses to go on without the configured isolation."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from verifleet.sandbox import FreshState, SandboxSettings

__all__ = ["SANDBOX_MODES", "add_sandbox_argument", "start_sandbox", "start_sandbox_soon"]

#: ``SandboxMode``'s values, spelled out so that building the parser (``--help``)
#: does not import the sandbox and the schemas; tests/integration/test_cli_help.py checks them.
SANDBOX_MODES = ("strict", "seccomp", "rlimits-only")


def add_sandbox_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--sandbox {strict,seccomp,rlimits-only}``."""
    parser.add_argument(
        "--sandbox",
        choices=SANDBOX_MODES,
        default=None,
        help=(
            "isolation of template and callable-trait code (default: $VERIFLEET_SANDBOX or "
            "strict = bubblewrap + seccomp + rlimits). 'seccomp' drops bubblewrap (containers "
            "without user namespaces), 'rlimits-only' keeps only a separate process with "
            "limits: explicit downgrades, see docs/security.md"
        ),
    )


def start_sandbox(
    args: argparse.Namespace, *, fresh_default: FreshState = "template"
) -> SandboxSettings:
    """Apply ``--sandbox`` and start one executor now, so a machine that lacks the
    isolation fails at start-up (:func:`~verifleet.sandbox.start_default_pool`;
    ``fresh_default`` as there).

    Raises:
        SandboxUnavailable, ConfigError: as ``start_default_pool``.
    """
    from verifleet.sandbox import start_default_pool

    settings, ready = start_default_pool(
        getattr(args, "sandbox", None), fresh_default=fresh_default
    )
    ready()
    return settings


def start_sandbox_soon(args: argparse.Namespace) -> Callable[[], None]:
    """:func:`start_sandbox`, its executor started in a thread of its own while the
    caller goes on (the mode is applied and the pool replaced before this returns);
    the caller calls the returned function before the first unit runs, which
    raises what :func:`start_sandbox` would have (``start_default_pool``'s ``soon``).
    """
    from verifleet.sandbox import start_default_pool

    return start_default_pool(getattr(args, "sandbox", None), soon=True)[1]
