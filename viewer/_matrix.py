"""The question × model matrix: every question's verdicts side by side across
answering models, judges or runs (promptfoo's view), whatever models each run has.

Comparing runs result by result only pairs identical (question, models,
replicate) keys, so model A in one run against model B in another matched
nothing; the matrix pairs by question alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ._index import ResultIndex

__all__ = ["MATRIX_BY", "matrix"]

MATRIX_BY = ("answering", "parsing", "pair")
"""What a matrix column is: an answering model, a judge, or the pair of both."""

_VERDICTS = ("pass", "fail", "none", "error")


def _label(frame: pd.DataFrame, by: str) -> pd.Series:
    if by == "pair":
        return frame["answering"] + " / " + frame["parsing"]
    return frame[by]


def matrix(
    runs: Sequence[tuple[str, ResultIndex]],
    *,
    by: str = "answering",
    differ: bool = False,
    offset: int = 0,
    limit: int = 200,
) -> dict[str, object]:
    """Verdict counts per (question, column), a page of questions at a time.

    Args:
        runs: ``(name, index)`` of each run to put side by side; with more than
            one, every column is a (run, model) and its label names the run.
        by: ``answering``, ``parsing`` or ``pair`` (see :data:`MATRIX_BY`).
        differ: Keep only the questions whose columns do not all agree (their
            majority verdicts differ, or a column lacks the question).
        offset: First question of the page, in first-seen order.
        limit: Questions per page (1-100,000).

    Returns:
        ``columns`` (label, run, model, passed, judged), ``total`` questions after
        ``differ``, and ``rows``: question id and text, ``disagree``, and one cell
        per column (verdict counts, the majority ``verdict``, and the run and row
        of a result to open), None where the column has no result for it.

    Raises:
        ValueError: an unknown ``by`` or a limit out of range.
    """
    if by not in MATRIX_BY:
        raise ValueError(f"matrix by {by!r}: use one of {', '.join(MATRIX_BY)}")
    if not 1 <= limit <= 100_000:
        raise ValueError(f"limit must be 1-100000, got {limit}")
    parts = []
    for number, (_name, index) in enumerate(runs):
        frame = index.frame[["row", "question_id", "question_text", "answering", "parsing"]].copy()
        frame["verdict"] = index.frame["verdict"]
        frame["run"] = number
        frame["model"] = _label(frame, by)
        parts.append(frame)
    empty = {"columns": [], "total": 0, "offset": offset, "rows": [], "by": by}
    if not parts:
        return empty
    frame = pd.concat(parts, ignore_index=True)
    if frame.empty:
        return empty
    several = len(runs) > 1
    frame["column"] = (
        frame["run"].map(lambda r: runs[r][0] + ": ") + frame["model"]
        if several
        else frame["model"]
    )
    columns = list(dict.fromkeys(frame["column"]))
    position = {label: i for i, label in enumerate(columns)}
    # One pass over the grouped frame (no lookup per question): fast at 100,000 results.
    grouped = frame.groupby(["question_id", "column"], sort=False)
    tallies = grouped["verdict"].value_counts().unstack(fill_value=0)
    where = grouped.agg(run=("run", "first"), row=("row", "first"))
    texts = frame.groupby("question_id", sort=False)["question_text"].first().to_dict()
    cells_of: dict[str, list[dict[str, object] | None]] = {
        q: [None] * len(columns) for q in dict.fromkeys(frame["question_id"])
    }
    present = [v for v in _VERDICTS if v in tallies.columns]
    for (question, column), counted, run, row in zip(
        tallies.index,
        tallies[present].itertuples(index=False, name=None),
        where.loc[tallies.index, "run"],
        where.loc[tallies.index, "row"],
        strict=True,
    ):
        tally = dict.fromkeys(_VERDICTS, 0) | {
            v: int(n) for v, n in zip(present, counted, strict=True)
        }
        majority = max(_VERDICTS, key=lambda v: (tally[v], -_VERDICTS.index(v)))
        cells_of[question][position[column]] = {
            **tally,
            "verdict": majority,
            "run": int(run),
            "row": int(row),
        }
    rows = []
    for question, cells in cells_of.items():
        shown = {c["verdict"] if c else None for c in cells}
        rows.append(
            {
                "question_id": question,
                "question_text": str(texts[question]),
                "disagree": len(shown) > 1,
                "cells": cells,
            }
        )
    if differ:
        rows = [r for r in rows if r["disagree"]]
    summary = []
    for label in columns:
        picked = frame[frame["column"] == label]
        passed = int((picked["verdict"] == "pass").sum())
        judged = int(picked["verdict"].isin(("pass", "fail")).sum())
        run = int(picked["run"].iloc[0])
        summary.append(
            {
                "label": label,
                "run": run,
                "model": str(picked["model"].iloc[0]),
                "passed": passed,
                "judged": judged,
            }
        )
    return {
        "by": by,
        "columns": summary,
        "total": len(rows),
        "offset": offset,
        "rows": rows[offset : offset + limit],
    }
