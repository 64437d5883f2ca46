"""Indexing a results Parquet file from its columns, without building results.

A results file carries flat summary columns next to the section structs (see
``results/_export/layout.py``): verdicts, check flags, tokens. Reading those,
plus the rubric score texts and one list of the rubric deep judgment, gives the
same summary rows as :func:`~._rows.summary_row` without validating every
result. A unit test checks that both paths give the same frame.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ._rows import answer_preview, joined_keywords, score_rows

__all__ = ["parquet_rows"]

_FLAT = (
    "result_id", "question_id", "question_text", "keywords", "answering_model",
    "parsing_model", "replicate", "run_name", "completed_without_errors", "error",
    "execution_time", "timestamp", "template_verification_performed", "verify_result",
    "verify_granular_result", "embedding_check_performed", "embedding_similarity_score",
    "embedding_override_applied", "regex_validations_performed", "regex_overall_success",
    "abstention_check_performed", "abstention_detected", "abstention_override_applied",
    "sufficiency_check_performed", "sufficiency_detected", "sufficiency_override_applied",
    "recursion_limit_reached", "rubric_evaluation_performed", "deep_judgment_performed",
    "deep_judgment_rubric_performed", "input_tokens", "output_tokens", "total_tokens",
)  # fmt: skip
_SCORES = ("llm", "regex", "callable", "agentic")
_NESTED = (
    *(f"rubric.{kind}_trait_scores" for kind in _SCORES),
    "rubric.metric_trait_scores",
    "deep_judgment_rubric.traits_without_valid_excerpts",
    "template.raw_llm_response",
)
_BATCH = 5000


def _loads(text: str | None) -> Any:  # JSON text of a known column
    return json.loads(text) if text else None


def _batch_rows(
    batch: pa.RecordBatch, first: int
) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    c = {name: batch.column(name).to_pylist() for name in _FLAT}
    rubric = batch.column("rubric").to_pylist()
    judged = batch.column("deep_judgment_rubric").to_pylist()
    templates = batch.column("template").to_pylist()
    rows: list[tuple[object, ...]] = []
    traits: list[tuple[object, ...]] = []
    for i in range(batch.num_rows):
        row = first + i
        performed = bool(c["template_verification_performed"][i])
        verdict = c["verify_result"][i]
        completed = bool(c["completed_without_errors"][i])
        sufficiency = bool(c["sufficiency_check_performed"][i])
        auto_fails = (judged[i] or {}).get("traits_without_valid_excerpts") or []
        answering, parsing = c["answering_model"][i], c["parsing_model"][i]
        rows.append(
            (
                row,
                c["result_id"][i],
                c["question_id"][i],
                c["question_text"][i],
                joined_keywords(c["keywords"][i]),
                answering,
                parsing,
                c["replicate"][i],
                c["run_name"][i] or "",
                completed,
                c["error"][i] or "",
                c["execution_time"][i],
                c["timestamp"][i],
                performed,
                verdict if performed else None,
                "error"
                if not completed
                else "pass"
                if verdict is True
                else "fail"
                if verdict is False
                else "none",
                c["verify_granular_result"][i],
                bool(c["embedding_check_performed"][i]),
                c["embedding_similarity_score"][i],
                bool(c["embedding_override_applied"][i]),
                bool(c["regex_validations_performed"][i]),
                c["regex_overall_success"][i],
                bool(c["abstention_check_performed"][i]),
                bool(c["abstention_detected"][i]),
                bool(c["abstention_override_applied"][i]),
                sufficiency,
                sufficiency and c["sufficiency_detected"][i] is False,
                bool(c["sufficiency_override_applied"][i]),
                bool(c["recursion_limit_reached"][i]),
                bool(c["rubric_evaluation_performed"][i]),
                bool(c["deep_judgment_performed"][i]),
                bool(c["deep_judgment_rubric_performed"][i]),
                len(auto_fails),
                c["input_tokens"][i],
                c["output_tokens"][i],
                c["total_tokens"][i],
                answer_preview((templates[i] or {}).get("raw_llm_response")),
            )
        )
        scores = rubric[i]
        if scores and c["rubric_evaluation_performed"][i]:
            typed = {kind: _loads(scores[f"{kind}_trait_scores"]) for kind in _SCORES}
            metrics = _loads(scores["metric_trait_scores"])
            traits.extend(score_rows(row, answering, parsing, typed, metrics))
    return rows, traits


def parquet_rows(path: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]] | None:
    """Summary and trait rows of every result in a results Parquet file, or None
    when the file lacks a summary column (written by an older verifleet; the caller
    then reads it result by result).

    Raises:
        OSError, pyarrow.ArrowException: the file cannot be read.
        ValueError: a rubric score column holds text that is not JSON.
    """
    parquet = pq.ParquetFile(path, pre_buffer=False)
    with parquet:
        if not set(_FLAT) <= set(parquet.schema_arrow.names):
            return None
        rows: list[tuple[object, ...]] = []
        traits: list[tuple[object, ...]] = []
        for batch in parquet.iter_batches(
            batch_size=_BATCH, columns=[*_FLAT, *_NESTED], use_threads=False
        ):
            more, scored = _batch_rows(batch, len(rows))
            rows.extend(more)
            traits.extend(scored)
        return rows, traits
