"""The ``--sandbox`` option of the commands that run benchmark code, and the
start-up check that refuses to go on without the configured isolation."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from verifleet.sandbox import SandboxSettings

__all__ = ["SANDBOX_MODES", "add_sandbox_argument", "start_sandbox"]

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


def start_sandbox(args: argparse.Namespace) -> SandboxSettings:
    """Apply ``--sandbox`` and start one executor now, so a machine that lacks the
    isolation fails at start-up instead of on the first question.

    In seccomp mode, a process that can give executors neither another uid nor
    namespaces of their own (see ``verifleet.sandbox._identity``) starts, but
    prints a warning saying what template code could reach.

    Raises:
        SandboxUnavailable: The isolation cannot be set up; the message names what
            is missing and the downgrade flag.
        ConfigError: An invalid ``VERIFLEET_SANDBOX*`` or ``VERIFLEET_RESULT_MAX_*`` value.
    """
    from verifleet.sandbox import SandboxSettings, isolation_warning, reset_default_pool
    from verifleet.sandbox._settings import ENV_MODE

    mode = getattr(args, "sandbox", None)
    if mode is not None:
        # Worker threads and anything started from here read the same mode.
        os.environ[ENV_MODE] = mode
    settings = SandboxSettings.from_env(mode)
    reset_default_pool(settings).start()
    warning = isolation_warning(settings.mode)
    if warning is not None:
        # Loud on purpose: the operator chose a mode this process cannot fully
        # provide, and nothing else would tell them.
        print(f"verifleet: WARNING: {warning}", file=sys.stderr, flush=True)
        logging.getLogger("verifleet.sandbox").warning("%s", warning)
    return settings
