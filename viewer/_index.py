"""ResultIndex: the in-memory summary frame of one run, and the table queries on it."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import pandas as pd

from verifleet.schemas import VerificationResult

from ._rows import KEYWORD_SEP, SUMMARY_FIELDS, TRAIT_FIELDS, summary_row, trait_rows

__all__ = ["TABLE_COLUMNS", "ResultIndex", "TableQuery"]

TABLE_COLUMNS: tuple[str, ...] = (
    "row",
    "question_id",
    "question_text",
    "answer",
    "answering",
    "parsing",
    "replicate",
    "verdict",
    "granular",
    "error",
    "execution_time",
    "total_tokens",
)
"""The summary columns a table page returns per result."""

_SORTABLE = frozenset(TABLE_COLUMNS)
# Flag columns: forced to bool dtype, because an empty frame's columns are object
# dtype and ``~`` on Python bools in an object column gives -1/-2, not a mask.
_FLAGS = (
    "completed", "template", "embedding", "embedding_override", "regex", "abstention",
    "abstention_detected", "abstention_override", "sufficiency", "insufficient",
    "sufficiency_override", "recursion_limit", "rubric", "deep_judgment",
    "deep_judgment_rubric",
)  # fmt: skip
_VERDICTS = frozenset({"pass", "fail", "none", "error"})

_T = TypeVar("_T")


@dataclass(frozen=True)
class TableQuery:
    """Filters, order and page of the question table; empty strings do not filter.

    Attributes:
        answering: Exact answering model display string.
        parsing: Exact parsing model display string.
        verdict: ``pass``, ``fail``, ``none`` or ``error``.
        keyword: A keyword the question carries (exact).
        error: ``yes`` (errored results only) or ``no`` (the others).
        search: Case-insensitive text found in the question id, question text,
            error or the start of the answer.
        sort: A :data:`TABLE_COLUMNS` name; ``-name`` sorts descending.
        offset: First row of the page (0-based).
        limit: Rows per page (1-1000).
    """

    answering: str = ""
    parsing: str = ""
    verdict: str = ""
    keyword: str = ""
    error: str = ""
    search: str = ""
    sort: str = "row"
    offset: int = 0
    limit: int = 50


# Numeric columns with gaps: float with NaN in the frame (sortable, summable).
_NUMBERS = (
    "replicate", "execution_time", "granular", "embedding_score",
    "input_tokens", "output_tokens", "total_tokens",
)  # fmt: skip
# Of those, the ones shown as whole numbers.
_WHOLE = frozenset({"row", "replicate", "input_tokens", "output_tokens", "total_tokens"})


def _clean(value: object) -> object:
    # JSON has no NaN; pandas turns missing numbers into NaN and missing objects into
    # None, and numpy scalars are not JSON-serialisable.
    if value is None:
        return None
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if hasattr(value, "item"):
        return _clean(value.item())
    return value


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """``frame`` as JSON-ready dicts (NaN as None, numpy scalars as Python values)."""
    columns = list(frame.columns)
    out = []
    for values in frame.itertuples(index=False, name=None):
        row: dict[str, Any] = {
            name: _clean(value) for name, value in zip(columns, values, strict=True)
        }
        for name in _WHOLE.intersection(row):
            if isinstance(row[name], float):
                row[name] = int(row[name])
        out.append(row)
    return out


def _summary_frame(rows: list[tuple[object, ...]]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(rows, columns=list(SUMMARY_FIELDS))
    for flag in _FLAGS:
        frame[flag] = frame[flag].astype(bool)
    for text in ("question_text", "question_id", "error", "keywords", "answer"):
        frame[text] = frame[text].astype(str)
    frame["dj_auto_fails"] = frame["dj_auto_fails"].astype(int)
    for number in _NUMBERS:
        frame[number] = pd.to_numeric(frame[number], errors="coerce").astype(float)
    # One lower-cased haystack per row: a search is one substring scan, not three.
    frame["haystack"] = (
        frame["question_id"]
        + KEYWORD_SEP
        + frame["question_text"]
        + KEYWORD_SEP
        + frame["error"]
        + KEYWORD_SEP
        + frame["answer"]
    ).str.lower()
    return frame


def _trait_frame(traits: list[tuple[object, ...]]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(traits, columns=list(TRAIT_FIELDS))
    frame["score"] = frame["score"].astype(float)
    return frame


def _joined(old: pd.DataFrame | None, new: pd.DataFrame) -> pd.DataFrame:
    return new if old is None or old.empty else pd.concat([old, new], ignore_index=True)


class ResultIndex:
    """Summary rows of a run's results, appendable while a job runs.

    Rows are added as results arrive (:meth:`add`) and wait as tuples until the
    next read, which appends them to the pandas frames and drops the tuples, so the
    index holds each row once. Derived answers (the overview) are memoised until
    the next addition. Safe to share between the web server's threads.
    """

    def __init__(self) -> None:
        self._count = 0
        self._pending: list[tuple[object, ...]] = []
        self._pending_traits: list[tuple[object, ...]] = []
        self._lock = threading.RLock()
        self._frame: pd.DataFrame | None = None
        self._trait_frame: pd.DataFrame | None = None
        self._memo: dict[str, object] = {}

    def __len__(self) -> int:
        return self._count

    def add_rows(self, rows: list[tuple[object, ...]], traits: list[tuple[object, ...]]) -> None:
        """Append ready-made :data:`SUMMARY_FIELDS` rows and :data:`TRAIT_FIELDS` rows
        (the Parquet reader builds them from columns without building results)."""
        with self._lock:
            self._pending.extend(rows)
            self._pending_traits.extend(traits)
            self._count += len(rows)
            self._memo.clear()

    def add(self, results: Iterable[VerificationResult], start: int | None = None) -> int:
        """Index ``results``, numbering them from ``start`` (default: the next row).

        Returns:
            How many results were added.
        """
        rows: list[tuple[object, ...]] = []
        traits: list[tuple[object, ...]] = []
        first = self._count if start is None else start
        for offset, result in enumerate(results):
            rows.append(summary_row(first + offset, result))
            traits.extend(trait_rows(first + offset, result))
        if rows:
            self.add_rows(rows, traits)
        return len(rows)

    def _settle(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        with self._lock:
            if self._frame is None or self._pending:
                self._frame = _joined(self._frame, _summary_frame(self._pending))
                self._pending = []
            if self._trait_frame is None or self._pending_traits:
                self._trait_frame = _joined(self._trait_frame, _trait_frame(self._pending_traits))
                self._pending_traits = []
            return self._frame, self._trait_frame

    @property
    def frame(self) -> pd.DataFrame:
        """One row per result, columns :data:`SUMMARY_FIELDS` (plus a search
        column), in the order added."""
        return self._settle()[0]

    @property
    def trait_frame(self) -> pd.DataFrame:
        """One row per numeric rubric score, columns :data:`TRAIT_FIELDS`."""
        return self._settle()[1]

    def memo(self, key: str, compute: Callable[[ResultIndex], _T]) -> _T:
        """``compute(self)``, remembered until results are added."""
        with self._lock:
            if key not in self._memo:
                self._memo[key] = compute(self)
            # A key is always computed by the same function: its value is _T.
            return cast(_T, self._memo[key])

    def facets(self) -> dict[str, list[str]]:
        """The values the table filters offer: models, keywords, run names."""
        frame = self.frame
        keywords: set[str] = set()
        for joined in frame["keywords"].unique():
            keywords.update(k for k in str(joined).split(KEYWORD_SEP) if k)
        return {
            "answering": sorted(frame["answering"].unique().tolist()),
            "parsing": sorted(frame["parsing"].unique().tolist()),
            "keywords": sorted(keywords),
            "verdicts": ["pass", "fail", "none", "error"],
        }

    def select(self, query: TableQuery) -> pd.DataFrame:
        """The rows matching ``query``'s filters, sorted, before paging.

        Raises:
            ValueError: unknown verdict or error filter, or unknown sort column.
        """
        frame = self.frame
        mask = pd.Series(True, index=frame.index)
        if query.answering:
            mask &= frame["answering"] == query.answering
        if query.parsing:
            mask &= frame["parsing"] == query.parsing
        if query.verdict:
            if query.verdict not in _VERDICTS:
                raise ValueError(f"unknown verdict {query.verdict!r}")
            mask &= frame["verdict"] == query.verdict
        if query.keyword:
            needle = KEYWORD_SEP + query.keyword + KEYWORD_SEP
            mask &= frame["keywords"].str.contains(needle, regex=False)
        if query.error:
            if query.error not in ("yes", "no"):
                raise ValueError(f"error filter must be 'yes' or 'no', not {query.error!r}")
            mask &= ~frame["completed"] if query.error == "yes" else frame["completed"]
        if query.search:
            mask &= frame["haystack"].str.contains(query.search.lower(), regex=False)
        selected = frame[mask]
        column = query.sort.lstrip("-")
        if column not in _SORTABLE:
            raise ValueError(f"cannot sort by {query.sort!r}")
        if column != "row" or query.sort.startswith("-"):
            selected = selected.sort_values(
                [column, "row"], ascending=not query.sort.startswith("-"), kind="stable"
            )
        return selected

    def page(self, query: TableQuery) -> dict[str, object]:
        """One page of the table: ``{"total", "offset", "rows"}``.

        Raises:
            ValueError: as for :meth:`select`, or a limit outside 1-1000.
        """
        if not 1 <= query.limit <= 1000:
            raise ValueError(f"limit must be 1-1000, got {query.limit}")
        selected = self.select(query)
        offset = max(0, query.offset)
        window = selected.iloc[offset : offset + query.limit]
        return {
            "total": len(selected),
            "offset": offset,
            "rows": records(window[list(TABLE_COLUMNS)]),
        }

    def table(self) -> list[list[object]]:
        """Every row's :data:`TABLE_COLUMNS` plus ``keywords`` and ``completed``, as
        lists: what the static report embeds for client-side paging."""
        frame = self.frame[[*TABLE_COLUMNS, "keywords", "completed"]]
        return [list(row.values()) for row in records(frame)]
