"""Running part of a benchmark: ``--questions`` (ids or globs) and ``--limit``."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from verifleet.schemas import Benchmark, ConfigError

__all__ = ["parse_question_patterns", "select_benchmark"]


def parse_question_patterns(text: str | Sequence[str] | None) -> list[str] | None:
    """``"q1,q2*"`` (or a list of such strings) as a list of patterns; None for none.

    Raises:
        ConfigError: the text holds no pattern at all.
    """
    if text is None:
        return None
    items = [text] if isinstance(text, str) else list(text)
    patterns = [p.strip() for item in items for p in item.split(",") if p.strip()]
    if not patterns:
        raise ConfigError("--questions: expected question ids or globs, e.g. q1,q2 or 'geo-*'")
    return patterns


def select_benchmark(
    benchmark: Benchmark,
    *,
    questions: Sequence[str] | None = None,
    limit: int | None = None,
) -> Benchmark:
    """The benchmark restricted to some questions and scenarios.

    Args:
        benchmark: The whole benchmark (left unchanged).
        questions: Ids or shell-style globs (``geo-*``, ``q1?``) matched against
            question and scenario ids; None keeps everything.
        limit: Keep the first ``limit`` questions (and the first ``limit``
            scenarios) in benchmark order, after ``questions``; None keeps all.

    Returns:
        ``benchmark`` itself when nothing is filtered, else a copy.

    Raises:
        ConfigError: ``limit`` below 1, or a pattern that matches no question or
            scenario (the message shows some ids to help).
    """
    if questions is None and limit is None:
        return benchmark
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit {limit}: expected a number of questions of at least 1")
    kept_questions = list(benchmark.questions)
    kept_scenarios = list(benchmark.scenarios)
    kept_broken = list(benchmark.broken_scenarios)  # they fail alone, when selected
    if questions is not None:
        ids = [q.id for q in benchmark.questions] + [s.id for s in benchmark.scenarios]
        ids += [b.id for b in benchmark.broken_scenarios]
        unmatched = [p for p in questions if not fnmatch.filter(ids, p)]
        if unmatched:
            sample = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
            raise ConfigError(
                f"--questions: {', '.join(unmatched)} matches no question or scenario of "
                f"{benchmark.name!r} (its ids: {sample or 'none'})"
            )

        def wanted(item_id: str) -> bool:
            return any(fnmatch.fnmatchcase(item_id, p) for p in questions)

        kept_questions = [q for q in kept_questions if wanted(q.id)]
        kept_scenarios = [s for s in kept_scenarios if wanted(s.id)]
        kept_broken = [b for b in kept_broken if wanted(b.id)]
    if limit is not None:
        kept_questions = kept_questions[:limit]
        kept_scenarios = kept_scenarios[:limit]
        kept_broken = kept_broken[: max(0, limit - len(kept_scenarios))]
    fields = {name: getattr(benchmark, name) for name in type(benchmark).model_fields}
    fields.update(questions=kept_questions, scenarios=kept_scenarios, broken_scenarios=kept_broken)
    return type(benchmark)(**fields)
