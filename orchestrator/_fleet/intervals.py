"""Pass-rate intervals of a fleet job's model pairs, with questions as clusters,
computed by the very code of the local run's end table (:class:`PairCounts`)."""

from __future__ import annotations

from verifleet.results.stats import Interval
from verifleet.schemas import Benchmark, JobSpec, VerificationConfig
from verifleet.store import ResultStore

from .._local.tally import PairCounts

__all__ = ["pair_intervals"]


def pair_intervals(store: ResultStore, job_id: str) -> dict[tuple[str, str], Interval | None]:
    """The 95 % interval of each (answering, parsing) pair's pass rate so far.

    The job's verdict sets hold result keys only; each key's question comes
    from the job's own benchmark and config (the keys are deterministic), so no
    result is read. A key that no unit of the job gives (there should be none)
    is left out.

    Returns:
        By the pair's display names; None for a pair without a verdict.

    Raises:
        KeyError: no such job.
        redis.RedisError: Redis is unreachable.
    """
    benchmark_json, config_json = store.load_spec(job_id)
    spec = JobSpec(
        Benchmark.model_validate_json(benchmark_json),
        VerificationConfig.model_validate_json(config_json),
    )
    question_of: dict[str, str] = {}
    for unit in spec.units():
        for key in spec.result_keys(unit, job_id):
            question_of[key] = unit.question.id
    intervals: dict[tuple[str, str], Interval | None] = {}
    for pair, verdicts in store.verdict_keys(job_id).items():
        counts = PairCounts()
        for verdict, keys in verdicts.items():
            passed = verdict == "pass"
            for key in keys:
                question = question_of.get(key)
                if question is None:
                    continue
                tally = counts.by_question.setdefault(question, [0, 0])
                tally[0] += passed
                tally[1] += 1
                counts.passed += passed
                counts.failed += not passed
        intervals[pair] = counts.interval()
    return intervals
