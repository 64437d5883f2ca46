"""Errors of the sandbox (all :class:`~verifleet.schemas.VerifleetError`)."""

from __future__ import annotations

from verifleet.schemas import VerifleetError

__all__ = ["ExecutorBusy", "ExecutorCrashed", "SandboxError", "SandboxUnavailable"]


class SandboxError(VerifleetError):
    """Base class of the sandbox's own errors."""


class SandboxUnavailable(SandboxError):
    """The isolation the configured mode asks for cannot be set up on this machine
    (no ``bwrap``, no user namespaces, no seccomp). The message names what is
    missing and the documented downgrade (``--sandbox`` / ``VERIFLEET_SANDBOX``)."""


class ExecutorCrashed(SandboxError):
    """An executor died, overran its wall-clock limit or answered nonsense while
    serving one call; it has been killed and will be replaced."""


class ExecutorBusy(SandboxError):
    """A pool call inside :func:`~verifleet.sandbox.cooperative` would have had to
    wait for an executor (none idle, none started yet, or the one that knows the
    template busy). Nothing was sent: make the same call outside the block.
    Not a failure: the bridge that makes such calls retries them in a thread."""
