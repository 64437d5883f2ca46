"""verifleet.sandbox — run untrusted template and callable-trait code in isolated
executor processes.

The host side (:class:`SandboxPool`) keeps a warm pool of executor processes per
process and talks to them with typed JSON lines over pipes (``_protocol``). Each
executor starts under the configured isolation (:class:`SandboxMode`: bubblewrap
namespaces, a seccomp filter, rlimits) and runs every call in a process forked
for that call, under the call's wall-clock limit: nothing one call's code
changes outlives it, and a call that hangs or crashes fails alone. See
docs/security.md.

Imports only :mod:`verifleet.schemas`, :mod:`verifleet.templates`, pydantic and
the standard library.
"""

from __future__ import annotations

import typing

from verifleet import _lazy

if typing.TYPE_CHECKING:
    from ._checkers import SandboxChecker, sandbox_checker
    from ._cooperative import ReadWait, cooperative
    from ._errors import ExecutorBusy, ExecutorCrashed, SandboxError, SandboxUnavailable
    from ._identity import isolation_warning
    from ._handle import TemplateEvaluation, TemplateHandle, TemplateVerification
    from ._pool import SandboxPool, SandboxStats, default_pool, reset_default_pool
    from ._settings import FreshState, SandboxMode, SandboxSettings
    from ._start import start_default_pool

__all__ = [
    "ExecutorBusy",
    "ExecutorCrashed",
    "FreshState",
    "ReadWait",
    "SandboxChecker",
    "SandboxError",
    "SandboxMode",
    "SandboxPool",
    "SandboxSettings",
    "SandboxStats",
    "SandboxUnavailable",
    "TemplateEvaluation",
    "TemplateHandle",
    "TemplateVerification",
    "cooperative",
    "default_pool",
    "isolation_warning",
    "reset_default_pool",
    "sandbox_checker",
    "start_default_pool",
]


# Each name of __all__ loads on first use, from the module the TYPE_CHECKING block
# imports it from: the CLI finds the executors' bytecode folder (_bytecode) before it
# imports pydantic.
__getattr__, __dir__ = _lazy.exports(__name__)
