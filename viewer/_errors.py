"""The viewer's exception."""

from __future__ import annotations

from verifleet.schemas import VerifleetError

__all__ = ["ViewerError"]


class ViewerError(VerifleetError):
    """The viewer cannot do what was asked: an unknown run or result row, a job that
    is not in the store, or a server setting that is unsafe (binding beyond this
    machine without a token)."""
