"""Starting this process's sandbox pool in a chosen mode, checked at start-up:
the one start every command that runs benchmark code (the CLI's ``--sandbox``)
and every reward server process goes through."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable

from ._identity import isolation_warning
from ._pool import reset_default_pool
from ._settings import ENV_MODE, FreshState, SandboxSettings

__all__ = ["start_default_pool"]


def start_default_pool(
    mode: str | None, *, soon: bool = False, fresh_default: FreshState = "template"
) -> tuple[SandboxSettings, Callable[[], None]]:
    """Apply ``mode`` (None: ``$VERIFLEET_SANDBOX``, else strict), replace the
    process-wide pool and start one executor, so a machine that lacks the
    isolation fails at start-up instead of on the first question. With ``soon``
    the executor starts in a thread of its own while the caller goes on.
    ``fresh_default``: the fresh state unless ``$VERIFLEET_SANDBOX_FRESH`` says.

    In seccomp mode, a process that can give executors neither another uid nor
    namespaces of their own (see ``._identity``) starts, but prints a warning
    saying what template code could reach.

    Returns:
        The settings, and a function that waits for the executor and raises
        what its start raised (``SandboxUnavailable``: the isolation cannot be
        set up, the message names what is missing and the downgrade; on every
        call once it failed).

    Raises:
        ConfigError: an invalid ``VERIFLEET_SANDBOX*`` or ``VERIFLEET_RESULT_MAX_*`` value.
    """
    if mode is not None:
        # Worker threads and processes started from here read the same mode.
        os.environ[ENV_MODE] = mode
    settings = SandboxSettings.from_env(mode, fresh_default=fresh_default)
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
