"""Whole-run summary statistics of a result set."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .result import VerificationResult

__all__ = ["summarize"]

_TEMPLATE_STAGES = ("answer_generation", "parsing")


def _tokens(usage: dict[str, Any] | None, stage: str, kind: str) -> int:
    value = ((usage or {}).get(stage) or {}).get(kind)
    # Providers sometimes report floats or nothing; only real numbers count.
    return int(value) if isinstance(value, int | float) and value == value else 0


def _combo(result: VerificationResult) -> str:
    return f"{result.metadata.answering_model} | {result.metadata.parsing_model}"


def _rate(passed: int, total: int) -> dict[str, Any]:
    return {"total": total, "passed": passed, "pass_rate": passed / total if total else 0.0}


def summarize(results: Sequence[VerificationResult]) -> dict[str, Any]:
    """Counts, token totals and pass rates of ``results`` in one pass.

    Returns:
        ``num_results``, ``num_completed``, ``num_with_template``, ``num_with_rubric``,
        ``num_with_judgment``, ``num_questions``, ``num_models``,
        ``num_parsing_models``, ``num_replicates``, ``total_execution_time``,
        ``tokens`` (``total_input``/``total_output``/``template_*``/``rubric_*``),
        ``tokens_by_combo`` and ``completion_by_combo`` keyed
        ``"<answering> | <parsing>"``, ``template_pass_overall``,
        ``template_pass_by_combo`` and ``template_pass_by_replicate`` (each
        ``{total, passed, pass_rate}``; None/empty when no template ran).
    """
    questions: set[str] = set()
    answering: set[str] = set()
    parsing: set[str] = set()
    replicates: set[int] = set()
    completed = with_template = with_rubric = with_judgment = 0
    elapsed = 0.0
    tokens = dict.fromkeys(
        ("total_input", "total_output", "template_input", "template_output",
         "rubric_input", "rubric_output"), 0,
    )  # fmt: skip
    by_combo_tokens: dict[str, dict[str, int]] = {}
    by_combo_done: dict[str, dict[str, int]] = {}
    passes: dict[str, list[int]] = {}
    rep_passes: dict[int | None, list[int]] = {}
    for result in results:
        meta, template = result.metadata, result.template
        questions.add(meta.question_id)
        answering.add(meta.answering_model)
        parsing.add(meta.parsing_model)
        if meta.replicate is not None:
            replicates.add(meta.replicate)
        completed += meta.completed_without_errors
        elapsed += meta.execution_time
        with_rubric += bool(result.rubric and result.rubric.rubric_evaluation_performed)
        with_judgment += bool(result.deep_judgment and result.deep_judgment.deep_judgment_performed)
        combo = _combo(result)
        done = by_combo_done.setdefault(combo, {"total": 0, "completed": 0})
        done["total"] += 1
        done["completed"] += meta.completed_without_errors
        usage = template.usage_metadata if template else None
        spent = by_combo_tokens.setdefault(combo, {"input": 0, "output": 0, "total": 0})
        for kind in ("input", "output"):
            total = _tokens(usage, "total", f"{kind}_tokens")
            tokens[f"total_{kind}"] += total
            spent[kind] += total
            spent["total"] += total
            tokens[f"template_{kind}"] += sum(
                _tokens(usage, stage, f"{kind}_tokens") for stage in _TEMPLATE_STAGES
            )
            tokens[f"rubric_{kind}"] += _tokens(usage, "rubric_evaluation", f"{kind}_tokens")
        if template is not None and template.template_verification_performed:
            with_template += 1
            verdict = int(template.verify_result is True)
            passes.setdefault(combo, [0, 0])
            passes[combo][0] += verdict
            passes[combo][1] += 1
            rep = rep_passes.setdefault(meta.replicate, [0, 0])
            rep[0] += verdict
            rep[1] += 1
    overall = [sum(p[0] for p in passes.values()), sum(p[1] for p in passes.values())]
    return {
        "num_results": len(results),
        "num_completed": completed,
        "num_with_template": with_template,
        "num_with_rubric": with_rubric,
        "num_with_judgment": with_judgment,
        "num_questions": len(questions),
        "num_models": len(answering),
        "num_parsing_models": len(parsing),
        "num_replicates": len(replicates),
        "total_execution_time": elapsed,
        "tokens": tokens,
        "tokens_by_combo": by_combo_tokens,
        "completion_by_combo": {
            combo: {**c, "completion_rate": c["completed"] / c["total"]}
            for combo, c in by_combo_done.items()
        },
        "template_pass_overall": _rate(*overall) if with_template else None,
        "template_pass_by_combo": {combo: _rate(*p) for combo, p in passes.items()},
        "template_pass_by_replicate": {rep: _rate(*p) for rep, p in rep_passes.items()},
    }
