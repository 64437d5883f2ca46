"""Sources of answers other than a plain chat model call."""

from .manual import ManualAnswerError, ManualAnswerStore

__all__ = ["ManualAnswerError", "ManualAnswerStore"]
