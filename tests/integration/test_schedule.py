"""The schedule that shares a queue between jobs by weight, against a real
redis-server: units claimed in proportion to weight, each exactly once, a new job
served at once, a cancelled job dropped, and positions that name the same units
submission and resume name."""

from __future__ import annotations

from collections import Counter

import redis
from _support.jobs import capitals_benchmark

from verifleet.schemas import JobSpec, ModelConfig, VerificationConfig
from verifleet.store import JobStatus, ResultStore, unit_messages, unit_ref_at


def _store(url: str) -> ResultStore:
    return ResultStore(redis.Redis.from_url(url), prefix="vftest")


def _job(
    store: ResultStore, job_id: str, units: int, weight: float = 1.0, queue: str = "q"
) -> None:
    store.create_job(
        job_id,
        benchmark_json="{}",
        config_json="{}",
        total_units=units,
        queue=queue,
        weight=weight,
        scheduled=True,
    )


def test_units_go_out_by_weight_each_once(redis_url: str) -> None:
    store = _store(redis_url)
    _job(store, "heavy", 400, weight=3)
    _job(store, "light", 400, weight=1)
    first = store.schedule.claim("q", 200)
    counts = Counter(job for job, _ in first)
    assert counts == {"heavy": 150, "light": 50}
    # Interleaved, not in runs: any 8 consecutive claims hold both jobs.
    assert all(len({j for j, _ in first[i : i + 8]}) == 2 for i in range(0, 192, 8))
    rest = store.schedule.claim("q", 10_000)
    claimed = first + rest
    assert len(claimed) == 800 == len(set(claimed))
    assert sorted(p for j, p in claimed if j == "light") == list(range(400))
    assert store.schedule.claim("q", 10) == []
    assert store.schedule.scheduled("q") == set()


def test_a_new_job_is_served_in_the_next_claim(redis_url: str) -> None:
    store = _store(redis_url)
    _job(store, "big", 1_000_000)
    assert {j for j, _ in store.schedule.claim("q", 5000)} == {"big"}
    _job(store, "small", 10)
    # It enters at the schedule's current pass: half of the next claims are its,
    # not all (it does not catch up on what big had) and not none.
    assert Counter(j for j, _ in store.schedule.claim("q", 10)) == {"big": 5, "small": 5}
    assert store.progress("small").share == 0.5
    assert Counter(j for j, _ in store.schedule.claim("q", 20)) == {"big": 15, "small": 5}
    assert store.progress("small").share == 0.0  # every unit given out
    assert store.progress("big").share == 1.0


def test_a_cancelled_job_leaves_and_other_queues_are_apart(redis_url: str) -> None:
    store = _store(redis_url)
    _job(store, "a", 100)
    _job(store, "b", 100)
    _job(store, "t", 100, queue="tenant")
    store.set_status("a", JobStatus.CANCELLED)
    assert {j for j, _ in store.schedule.claim("q", 50)} == {"b"}
    assert store.schedule.scheduled("q") == {"b"}
    assert {j for j, _ in store.schedule.claim("tenant", 50)} == {"t"}
    progress = store.progress("t")
    assert (progress.queue, progress.weight, progress.share) == ("tenant", 1.0, 1.0)


def test_positions_name_the_units_of_submission_order() -> None:
    bench, _answers = capitals_benchmark(3)
    config = VerificationConfig.build(
        answering_models=[
            ModelConfig.parse("http://127.0.0.1:1/v1#a"),
            ModelConfig.parse("http://127.0.0.1:1/v1#b"),
        ],
        parsing_models=[ModelConfig.parse("http://127.0.0.1:1/v1#judge")],
        replicate_count=2,
    )
    expected = list(unit_messages("job", bench, config))
    assert [unit_ref_at("job", bench, config, i) for i in range(12)] == expected
    # Resume sends the missing units among those given out, in the same order.
    head = list(unit_messages("job", bench, config, stop=5))
    assert head == expected[:5]
    spec = JobSpec(bench, config)
    done = {spec.unit(bench.questions[0], config.answering_models[1], 1).key("job")}
    resumed = list(unit_messages("job", bench, config, skip=done, stop=5))
    assert resumed == [expected[i] for i in (0, 1, 3, 4)]


def _stride(jobs: dict[str, list[float]], n: int) -> list[tuple[str, int]]:
    """The stride rule itself, unit by unit: the job with the lowest (pass, id)
    gives its next unit and its pass grows by 1/weight. ``jobs``: id ->
    [pass, weight, cursor, total]."""
    out = []
    while n > 0:
        live = [(v[0], j) for j, v in jobs.items() if v[2] < v[3]]
        if not live:
            break
        _, job = min(live)
        state = jobs[job]
        out.append((job, int(state[2])))
        state[0] += 1 / state[1]
        state[2] += 1
        n -= 1
    return out


def test_claims_follow_the_stride_rule_with_many_jobs_ties_and_small_fills(
    redis_url: str,
) -> None:
    """The claim script reads the lowest 64 jobs per round and serves them in
    Lua; the order it gives units in must be the stride rule's, including
    across rounds (100 jobs), on tied passes and when fills stop mid-round."""
    import random

    rng = random.Random(23)
    store = _store(redis_url)
    model: dict[str, list[float]] = {}
    for i in range(100):
        job = f"j{i:03d}"
        weight = rng.choice([1.0, 1.0, 2.0, 3.0, 0.5])
        total = rng.randint(1, 40)
        _job(store, job, total, weight=weight, queue="strides")
        model[job] = [0.0, weight, 0, total]
    claimed: list[tuple[str, int]] = []
    expected: list[tuple[str, int]] = []
    for fill in [1, 7, 64, 65, 300, 5, 1000, 10_000]:
        claimed += store.schedule.claim("strides", fill)
        expected += _stride(model, fill)
    assert claimed == expected
    assert len(claimed) == sum(int(v[3]) for v in model.values()) == len(set(claimed))
    assert store.schedule.scheduled("strides") == set()
