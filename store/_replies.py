"""Reading Redis replies: the store's client answers bytes."""

from __future__ import annotations

__all__ = ["reply_text"]


def reply_text(value: object) -> str:
    """A Redis reply (bytes from the store's client) as text."""
    return value.decode() if isinstance(value, bytes) else str(value)
