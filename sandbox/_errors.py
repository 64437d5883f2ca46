"""Errors of the sandbox (all :class:`~verifleet.schemas.VerifleetError`)."""

from __future__ import annotations

from verifleet.schemas import VerifleetError

__all__ = ["ExecutorCrashed", "SandboxError", "SandboxUnavailable"]


class SandboxError(VerifleetError):
    """Base class of the sandbox's own errors."""


class SandboxUnavailable(SandboxError):
    """The isolation the configured mode asks for cannot be set up on this machine
    (no ``bwrap``, no user namespaces, no seccomp). The message names what is
    missing and the documented downgrade (``--sandbox`` / ``VERIFLEET_SANDBOX``)."""


class ExecutorCrashed(SandboxError):
    """An executor died, overran its wall-clock limit or answered nonsense while
    serving one call; it has been killed and will be replaced."""
