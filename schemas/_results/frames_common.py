"""Helpers shared by the DataFrame builders: column blocks and frame assembly."""

from __future__ import annotations

import typing
from collections.abc import Sequence

from .failure import classify_failure
from .result import VerificationResult

if typing.TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "IDENTITY_COLUMNS",
    "SCENARIO_COLUMNS",
    "STATUS_COLUMNS",
    "build_frame",
    "result_columns",
]

_NULLABLE_INT_COLUMNS = frozenset({"replicate", "result_index", "excerpt_index", "scenario_turn"})

#: The question a row is about, in the order every per-result frame lists them.
IDENTITY_COLUMNS: tuple[str, ...] = (
    "question_id",
    "template_id",
    "question_text",
    "keywords",
    "replicate",
)


#: The verdict of a row's result: the original framework's ``success``,
#: ``failure_*`` and ``caveats`` (from ``metadata.failure`` / ``metadata.caveats``),
#: then verifleet's own ``completed_without_errors`` and ``error``.
STATUS_COLUMNS: tuple[str, ...] = (
    "success",
    "failure_category",
    "failure_group",
    "failure_stage",
    "failure_reason",
    "caveats",
    "completed_without_errors",
    "error",
)

#: Where a scenario turn's result sits in its run (all null for plain questions).
SCENARIO_COLUMNS: tuple[str, ...] = (
    "scenario_id",
    "scenario_node",
    "scenario_turn",
    "scenario_path",
)


def result_columns(result: VerificationResult, index: int) -> dict[str, object]:
    """Every per-result column a frame may list, from ``result``'s metadata.

    :data:`STATUS_COLUMNS` (``success`` is True when ``metadata.failure`` is None,
    classified by :func:`classify_failure` when the result does not record it;
    ``caveats`` is comma-joined, ``""`` when none, as in the original),
    :data:`IDENTITY_COLUMNS`, :data:`SCENARIO_COLUMNS`, answering and parsing
    model display strings and system prompts, ``execution_time``, ``timestamp``,
    ``run_name``, and ``result_index`` (``index``, the result's position in its
    input). Each frame keeps the ones its column list names: :func:`build_frame`
    drops the rest.
    """
    meta = result.metadata
    # A result recorded before failures were (hand-built, or stored earlier) is
    # classified now, by the same rules the pipeline applies.
    failure = meta.failure or classify_failure(result)
    return {
        "success": failure is None,
        "failure_category": failure.category if failure else None,
        "failure_group": failure.group if failure else None,
        "failure_stage": failure.stage if failure else None,
        "failure_reason": failure.reason if failure else None,
        "caveats": ",".join(meta.caveats),
        "completed_without_errors": meta.completed_without_errors,
        "error": meta.error,
        **{name: getattr(meta, name) for name in IDENTITY_COLUMNS},
        **{name: getattr(meta, name) for name in SCENARIO_COLUMNS},
        "answering_model": meta.answering_model,
        "parsing_model": meta.parsing_model,
        "answering_system_prompt": meta.answering_system_prompt,
        "parsing_system_prompt": meta.parsing_system_prompt,
        "execution_time": meta.execution_time,
        "timestamp": meta.timestamp,
        "run_name": meta.run_name,
        "result_index": index,
    }


def _column(values: list[object]) -> pd.Series:
    import pandas as pd  # loaded when a frame is built: sandbox executors never need it

    series = pd.Series(values)
    if isinstance(series.dtype, pd.StringDtype):
        # pandas 3 infers a string dtype whose missing value is NaN; keep None so a
        # text cell is either a string or None, as in the result model.
        return pd.Series(values, dtype=object)
    return series


def build_frame(rows: list[dict[str, object]], columns: Sequence[str]) -> pd.DataFrame:
    """A frame with exactly ``columns`` in that order, also when there are no rows.

    A key missing from a row becomes a null; keys outside ``columns`` are dropped.
    """
    import pandas as pd

    if not rows:
        return pd.DataFrame({name: pd.Series(dtype=object) for name in columns})
    frame = pd.DataFrame({name: _column([row.get(name) for row in rows]) for name in columns})
    for name in _NULLABLE_INT_COLUMNS.intersection(frame.columns):
        # Keep replicate 1 an int (not 1.0) when other rows have no replicate.
        frame[name] = frame[name].astype("Int64")
    return frame
