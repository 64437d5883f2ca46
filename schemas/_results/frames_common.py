"""Helpers shared by the DataFrame builders: column blocks and frame assembly."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from .result import VerificationResult

__all__ = [
    "IDENTITY_COLUMNS",
    "build_frame",
    "identity_columns",
    "model_columns",
    "prompt_columns",
    "status_columns",
    "timing_columns",
]

#: The question a row is about, in the order every per-result frame lists them.
IDENTITY_COLUMNS: tuple[str, ...] = (
    "question_id",
    "template_id",
    "question_text",
    "keywords",
    "replicate",
)

_NULLABLE_INT_COLUMNS = frozenset({"replicate", "result_index", "excerpt_index"})


def status_columns(result: VerificationResult) -> dict[str, Any]:
    """``completed_without_errors`` and ``error``."""
    meta = result.metadata
    return {"completed_without_errors": meta.completed_without_errors, "error": meta.error}


def identity_columns(result: VerificationResult) -> dict[str, Any]:
    """The :data:`IDENTITY_COLUMNS` of ``result``, from its metadata."""
    meta = result.metadata
    return {name: getattr(meta, name) for name in IDENTITY_COLUMNS}


def model_columns(result: VerificationResult) -> dict[str, Any]:
    """Answering and parsing model display strings."""
    meta = result.metadata
    return {"answering_model": meta.answering_model, "parsing_model": meta.parsing_model}


def prompt_columns(result: VerificationResult) -> dict[str, Any]:
    """Answering and parsing system prompts."""
    meta = result.metadata
    return {
        "answering_system_prompt": meta.answering_system_prompt,
        "parsing_system_prompt": meta.parsing_system_prompt,
    }


def timing_columns(result: VerificationResult) -> dict[str, Any]:
    """``execution_time``, ``timestamp`` and ``run_name``."""
    meta = result.metadata
    return {
        "execution_time": meta.execution_time,
        "timestamp": meta.timestamp,
        "run_name": meta.run_name,
    }


def _column(values: list[Any]) -> pd.Series:
    series = pd.Series(values)
    if isinstance(series.dtype, pd.StringDtype):
        # pandas 3 infers a string dtype whose missing value is NaN; keep None so a
        # text cell is either a string or None, as in the result model.
        return pd.Series(values, dtype=object)
    return series


def build_frame(rows: list[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """A frame with exactly ``columns`` in that order, also when there are no rows.

    A key missing from a row becomes a null; keys outside ``columns`` are dropped.
    """
    if not rows:
        return pd.DataFrame({name: pd.Series(dtype=object) for name in columns})
    frame = pd.DataFrame({name: _column([row.get(name) for row in rows]) for name in columns})
    for name in _NULLABLE_INT_COLUMNS.intersection(frame.columns):
        # Keep replicate 1 an int (not 1.0) when other rows have no replicate.
        frame[name] = frame[name].astype("Int64")
    return frame
