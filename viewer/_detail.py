"""One result in full, and the verdict changes between two runs."""

from __future__ import annotations

import pandas as pd

from verifleet.schemas import VerificationResult

from ._index import ResultIndex, records
from ._rows import verdict_of

__all__ = ["COMPARE_KEY", "compare", "result_detail"]

COMPARE_KEY: tuple[str, ...] = ("question_id", "answering", "parsing", "replicate")
"""What makes a result in one run the same evaluation as one in another run."""


def _fields(result: VerificationResult) -> list[dict[str, object]]:
    template = result.template
    if template is None:
        return []
    parsed = template.parsed_llm_response or {}
    expected = template.parsed_gt_response or {}
    outcome = template.field_results or {}
    names = list(dict.fromkeys([*expected, *parsed]))
    return [
        {
            "name": name,
            "parsed": parsed.get(name),
            "expected": expected.get(name),
            # The template's own per-field verdict when it gave one; None otherwise.
            "match": outcome.get(name),
        }
        for name in names
    ]


def _excerpts(result: VerificationResult) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    sources = (
        ("attribute", result.deep_judgment and result.deep_judgment.extracted_excerpts),
        (
            "trait",
            result.deep_judgment_rubric and result.deep_judgment_rubric.extracted_rubric_excerpts,
        ),
    )
    for kind, found in sources:
        for name, excerpts in (found or {}).items():
            for excerpt in excerpts:
                text = excerpt.get("text") if isinstance(excerpt, dict) else None
                if isinstance(text, str) and text.strip():
                    out.append({**excerpt, "kind": kind, "name": name, "text": text})
    return out


def result_detail(
    run: str,
    row: int,
    result: VerificationResult,
    template: dict[str, str | None] | None = None,
) -> dict[str, object]:
    """Everything the result page shows: the full result (as JSON) plus the parts
    derived for display.

    Args:
        run: The run's name.
        row: The result's row in the run.
        result: The result.
        template: Its answer template's ``source`` (None: not available) and a
            ``note`` saying where it comes from or why it is missing
            (:meth:`TemplateSources.lookup`); None: nothing known.

    Returns:
        ``run``, ``row``, ``verdict``, ``result`` (``model_dump(mode="json")``),
        ``fields`` (parsed vs ground truth per field), ``excerpts`` (deep-judgment
        excerpts to highlight in the answer), ``trait_scores`` (every rubric
        score by trait name) and ``template_source`` (``source``, ``note``).
    """
    rubric = result.rubric
    return {
        "run": run,
        "row": row,
        "verdict": verdict_of(result),
        "answering": result.metadata.answering_model,
        "parsing": result.metadata.parsing_model,
        "result": result.model_dump(mode="json"),
        "fields": _fields(result),
        "excerpts": _excerpts(result),
        "trait_scores": rubric.get_all_trait_scores() if rubric is not None else {},
        "template_source": template
        or {"source": None, "note": "Template source not available for this run."},
    }


def _keyed(index: ResultIndex) -> pd.DataFrame:
    frame = index.frame[[*COMPARE_KEY, "row", "verdict", "question_text", "granular"]].copy()
    # NaN never equals NaN in a join key; an absent replicate must match itself.
    frame["replicate"] = frame["replicate"].fillna(-1)
    # One result per key: with duplicates (a re-run appended to a file) the last wins.
    return frame.drop_duplicates(list(COMPARE_KEY), keep="last")


def compare(
    before: ResultIndex, after: ResultIndex, *, limit: int = 1000, offset: int = 0
) -> dict[str, object]:
    """The evaluations present in both runs whose verdict changed.

    Results are matched on :data:`COMPARE_KEY`.

    Returns:
        ``matched`` (evaluations in both), ``only_before``, ``only_after``,
        ``changed`` (how many changed), ``transitions`` (``{"pass→fail": n}``),
        ``total`` and ``rows`` (one page of changed evaluations with both rows and
        verdicts).
    """
    a, b = _keyed(before), _keyed(after)
    joined = a.merge(b, on=list(COMPARE_KEY), how="outer", suffixes=("_a", "_b"), indicator=True)
    both = joined[joined["_merge"] == "both"]
    changed = both[both["verdict_a"] != both["verdict_b"]].sort_values(["question_id", "row_a"])
    transitions = (
        (changed["verdict_a"] + "→" + changed["verdict_b"]).value_counts().sort_index().to_dict()
    )
    window = changed.iloc[offset : offset + limit]
    columns = {
        "question_id": "question_id",
        "question_text_a": "question_text",
        "answering": "answering",
        "parsing": "parsing",
        "replicate": "replicate",
        "row_a": "row_a",
        "row_b": "row_b",
        "verdict_a": "verdict_a",
        "verdict_b": "verdict_b",
    }
    page = window[list(columns)].rename(columns=columns)
    rows = records(page)
    for row in rows:
        row["replicate"] = None if row["replicate"] == -1 else int(row["replicate"])
        row["row_a"], row["row_b"] = int(row["row_a"]), int(row["row_b"])
    return {
        "matched": len(both),
        "only_before": int((joined["_merge"] == "left_only").sum()),
        "only_after": int((joined["_merge"] == "right_only").sum()),
        "changed": len(changed),
        "transitions": {str(k): int(v) for k, v in transitions.items()},
        "total": len(changed),
        "offset": offset,
        "rows": rows,
    }
