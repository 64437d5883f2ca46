"""Instructions that ask any model for JSON, and tell it what went wrong."""

from __future__ import annotations

from collections.abc import Sequence

from ._schema_text import schema_text

__all__ = ["json_reply_instruction", "json_retry_feedback"]


def json_reply_instruction(schema: dict[str, object]) -> str:
    """Appended when the provider cannot enforce a schema itself."""
    return (
        "Reply with a single JSON object and nothing else: no prose, no Markdown. "
        "The object must match this JSON Schema:\n"
        f"{schema_text(schema)}"
    )


def json_retry_feedback(problems: Sequence[str]) -> str:
    """The follow-up message after an unusable JSON reply."""
    listed = "\n".join(f"- {problem}" for problem in problems[:10])
    return (
        "Your previous reply could not be used:\n"
        f"{listed}\n"
        "Reply again with only the corrected JSON object."
    )
