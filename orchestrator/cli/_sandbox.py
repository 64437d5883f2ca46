"""The ``--sandbox`` option of the commands that run benchmark code, and the
start-up check that refuses to go on without the configured isolation."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from verifleet.sandbox import SandboxSettings

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
    settings, ready = _start(args, soon=False)
    ready()
    return settings


def start_sandbox_soon(args: argparse.Namespace) -> Callable[[], None]:
    """:func:`start_sandbox`, its executor started in a thread of its own: the
    caller goes on with its start-up (loading the benchmark, importing the
    pipeline) while the executor starts, and calls the returned function
    before the first unit runs.

    The mode is applied and the process-wide pool replaced before this returns,
    so anything built meanwhile uses the new pool.

    Returns:
        A function that waits for the executor and raises what
        :func:`start_sandbox` would have raised (``SandboxUnavailable``,
        ``ConfigError``), on every call once it failed.
    """
    return _start(args, soon=True)[1]


def _start(args: argparse.Namespace, *, soon: bool) -> tuple[SandboxSettings, Callable[[], None]]:
    from verifleet.sandbox import SandboxSettings, isolation_warning, reset_default_pool
    from verifleet.sandbox._settings import ENV_MODE

    mode = getattr(args, "sandbox", None)
    if mode is not None:
        # Worker threads and anything started from here read the same mode.
        os.environ[ENV_MODE] = mode
    settings = SandboxSettings.from_env(mode)
    pool = reset_default_pool(settings)
    failure: list[BaseException] = []
    warnings: list[str] = []

    def start() -> None:
        try:
            pool.start()
            # The identity probe behind it (a process, decided once) is shared
            # with the executor's start: both off the caller's path when soon.
            warning = isolation_warning(settings.mode)
        except BaseException as exc:  # raised by ready(), in the caller's thread
            failure.append(exc)
        else:
            if warning is not None:
                warnings.append(warning)

    thread = threading.Thread(target=start, name="verifleet-sandbox-start", daemon=True)
    if soon:
        thread.start()
    else:
        start()

    def ready() -> None:
        if soon:
            thread.join()
        if failure:
            raise failure[0]
        for warning in warnings:
            # Loud on purpose: the operator chose a mode this process cannot
            # fully provide, and nothing else would tell them.
            print(f"verifleet: WARNING: {warning}", file=sys.stderr, flush=True)
            logging.getLogger("verifleet.sandbox").warning("%s", warning)
        warnings.clear()

    return settings, ready
