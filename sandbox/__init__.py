"""verifleet.sandbox — run untrusted template and callable-trait code in isolated
executor processes.

The host side (:class:`SandboxPool`) keeps a warm pool of executor processes per
process and talks to them with JSON lines over pipes; only JSON crosses. Each
executor starts under the configured isolation (:class:`SandboxMode`: bubblewrap
namespaces, a seccomp filter, rlimits) and every call has a wall-clock limit
that kills the executor; a dead executor is replaced and only the call that
killed it fails. See docs/security.md.

Imports only :mod:`verifleet.schemas`, pydantic and the standard library.
"""

from ._checkers import install_sandbox_checkers
from ._errors import ExecutorCrashed, SandboxError, SandboxUnavailable
from ._handle import TemplateEvaluation, TemplateHandle, TemplateVerification
from ._pool import SandboxPool, SandboxStats, default_pool, reset_default_pool
from ._settings import SandboxMode, SandboxSettings

__all__ = [
    "ExecutorCrashed",
    "SandboxError",
    "SandboxMode",
    "SandboxPool",
    "SandboxSettings",
    "SandboxStats",
    "SandboxUnavailable",
    "TemplateEvaluation",
    "TemplateHandle",
    "TemplateVerification",
    "default_pool",
    "install_sandbox_checkers",
    "reset_default_pool",
]

# Benchmark checks (Benchmark.validate, load_benchmark) run code in executors
# from here on; the executor restores the in-process checkers for itself.
install_sandbox_checkers()
