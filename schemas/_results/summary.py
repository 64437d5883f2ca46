"""Whole-run summary statistics of a result set."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .result import VerificationResult

__all__ = ["summarize"]

_TOKEN_KEYS = (
    "total_input", "total_output", "template_input", "template_output",
    "rubric_input", "rubric_output",
)  # fmt: skip


def _tokens(usage: Mapping[str, Mapping[str, object]], stage: str, kind: str) -> int:
    value = (usage.get(stage) or {}).get(kind)
    # Providers sometimes report floats, NaN or nothing; only real numbers count.
    return int(value) if isinstance(value, int | float) and value == value else 0


def _rate(passed: int, total: int) -> dict[str, object]:
    return {"total": total, "passed": passed, "pass_rate": passed / total if total else 0.0}


@dataclass
class _Tally:
    """Running counts over results; :meth:`report` renders the summary dict."""

    num_results: int = 0
    completed: int = 0
    with_template: int = 0
    with_rubric: int = 0
    with_judgment: int = 0
    elapsed: float = 0.0
    questions: set[str] = field(default_factory=set)
    answering: set[str] = field(default_factory=set)
    parsing: set[str] = field(default_factory=set)
    replicates: set[int] = field(default_factory=set)
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_TOKEN_KEYS, 0))
    combo_tokens: dict[str, dict[str, int]] = field(default_factory=dict)
    combo_done: dict[str, list[int]] = field(default_factory=dict)
    combo_pass: dict[str, list[int]] = field(default_factory=dict)
    replicate_pass: dict[int | None, list[int]] = field(default_factory=dict)

    def add(self, result: VerificationResult) -> None:
        """Count one result."""
        meta, template = result.metadata, result.template
        combo = f"{meta.answering_model} | {meta.parsing_model}"
        self.num_results += 1
        self.completed += meta.completed_without_errors
        self.elapsed += meta.execution_time
        self.questions.add(meta.question_id)
        self.answering.add(meta.answering_model)
        self.parsing.add(meta.parsing_model)
        if meta.replicate is not None:
            self.replicates.add(meta.replicate)
        self.with_rubric += bool(result.rubric and result.rubric.rubric_evaluation_performed)
        self.with_judgment += bool(
            result.deep_judgment and result.deep_judgment.deep_judgment_performed
        )
        done = self.combo_done.setdefault(combo, [0, 0])
        done[0] += meta.completed_without_errors
        done[1] += 1
        self._add_tokens(combo, template.usage_metadata if template else None)
        if template is not None and template.template_verification_performed:
            self.with_template += 1
            verdict = int(template.verify_result is True)
            for tally in (
                self.combo_pass.setdefault(combo, [0, 0]),
                self.replicate_pass.setdefault(meta.replicate, [0, 0]),
            ):
                tally[0] += verdict
                tally[1] += 1

    def _add_tokens(self, combo: str, usage: Mapping[str, Mapping[str, object]] | None) -> None:
        spent = self.combo_tokens.setdefault(combo, {"input": 0, "output": 0, "total": 0})
        if not usage:
            return
        for kind in ("input", "output"):
            key = f"{kind}_tokens"
            total = _tokens(usage, "total", key)
            self.tokens[f"total_{kind}"] += total
            spent[kind] += total
            spent["total"] += total
            self.tokens[f"template_{kind}"] += _tokens(usage, "answer_generation", key)
            self.tokens[f"template_{kind}"] += _tokens(usage, "parsing", key)
            self.tokens[f"rubric_{kind}"] += _tokens(usage, "rubric_evaluation", key)

    def report(self) -> dict[str, object]:
        """The summary of everything counted so far."""
        overall_passed = sum(p[0] for p in self.combo_pass.values())
        return {
            "num_results": self.num_results,
            "num_completed": self.completed,
            "num_with_template": self.with_template,
            "num_with_rubric": self.with_rubric,
            "num_with_judgment": self.with_judgment,
            "num_questions": len(self.questions),
            "num_models": len(self.answering),
            "num_parsing_models": len(self.parsing),
            "num_replicates": len(self.replicates),
            "total_execution_time": self.elapsed,
            "tokens": self.tokens,
            "tokens_by_combo": self.combo_tokens,
            "completion_by_combo": {
                combo: {"total": n, "completed": ok, "completion_rate": ok / n}
                for combo, (ok, n) in self.combo_done.items()
            },
            "template_pass_overall": (
                _rate(overall_passed, self.with_template) if self.with_template else None
            ),
            "template_pass_by_combo": {c: _rate(*p) for c, p in self.combo_pass.items()},
            "template_pass_by_replicate": {r: _rate(*p) for r, p in self.replicate_pass.items()},
        }


def summarize(results: Sequence[VerificationResult]) -> dict[str, object]:
    """Counts, token totals and pass rates of ``results`` in one pass.

    Returns:
        ``num_results``, ``num_completed``, ``num_with_template``, ``num_with_rubric``,
        ``num_with_judgment``, ``num_questions``, ``num_models``,
        ``num_parsing_models``, ``num_replicates``, ``total_execution_time``,
        ``tokens`` (``total_*`` from the ``total`` usage entry, ``template_*`` from
        answer generation plus parsing, ``rubric_*``), ``tokens_by_combo`` and
        ``completion_by_combo`` keyed ``"<answering> | <parsing>"``,
        ``template_pass_overall`` (None when no template ran),
        ``template_pass_by_combo`` and ``template_pass_by_replicate`` (each
        ``{total, passed, pass_rate}``).
    """
    tally = _Tally()
    for result in results:
        tally.add(result)
    return tally.report()
