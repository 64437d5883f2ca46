"""``ResultStore.begin_unit``: what a worker checks and records as it takes a unit
up (job status, unit done already, mark started), in one round trip, against a
real redis-server."""

from __future__ import annotations

import pytest
import redis
from _support.factories import make_result
from _support.jobs import capitals_benchmark

from verifleet.orchestrator._fleet.submit import check_job, submit_job
from verifleet.sandbox import SandboxPool, SandboxSettings
from verifleet.schemas import (
    ModelConfig,
    TemplateValidationError,
    VerificationConfig,
    compute_template_id,
)
from verifleet.store import Broker, JobStatus, ResultStore, UnitWrite


def _store(url: str) -> ResultStore:
    return ResultStore(redis.Redis.from_url(url), prefix="vfbegin")


def test_begin_unit_reports_the_job_and_marks_a_fresh_unit_started(redis_url: str) -> None:
    store = _store(redis_url)
    assert store.begin_unit("nope", "u1") == (None, False, None, 1)  # no such job
    store.create_job("j1", benchmark_json="{}", config_json="{}", total_units=2)
    assert store.begin_unit("j1", "u1") == (JobStatus.RUNNING, False, None, 1)  # queued -> running
    assert store.status("j1") == JobStatus.RUNNING
    assert store.progress("j1").in_flight == 1
    finished = store.write_unit("j1", "u1", [make_result("q1", verified=True)], ["k1"])
    assert finished is False
    assert store.begin_unit("j1", "u1") == (JobStatus.RUNNING, True, None, 1)  # a redelivery: done
    assert store.progress("j1").in_flight == 0  # ... and not marked started again
    assert store.begin_unit("j1", "u2") == (JobStatus.RUNNING, False, None, 1)
    assert store.write_unit("j1", "u2", [make_result("q2", verified=False)], ["k2"]) is True
    assert store.status("j1") == JobStatus.DONE


def test_begin_unit_of_a_cancelled_job_marks_nothing(redis_url: str) -> None:
    store = _store(redis_url)
    store.create_job("j2", benchmark_json="{}", config_json="{}", total_units=1)
    store.set_status("j2", JobStatus.CANCELLED)
    assert store.begin_unit("j2", "u1") == (JobStatus.CANCELLED, False, None, 1)
    assert store.progress("j2").in_flight == 0


def test_a_worker_takes_up_the_template_description_stored_at_submission(
    redis_url: str,
) -> None:
    """A submission that compiled its templates (``--strict``, or a full
    ``check_job`` handed to ``submit_job``, as here: the broken question fails
    alone) describes each once in its sandbox and stores it; a worker asking
    for it as it takes a unit up gets it in the same round trip and needs no
    executor of its own to describe the template."""
    benchmark, _answers = capitals_benchmark(2)
    broken = benchmark.questions[1].model_copy(update={"answer_template": "import os\n"})
    benchmark = benchmark.model_copy(update={"questions": [benchmark.questions[0], broken]})
    config = VerificationConfig.build(
        answering_models=[ModelConfig.parse("http://127.0.0.1:9/v1#m")],
        parsing_models=[ModelConfig.parse("http://127.0.0.1:9/v1#m")],
    )
    store = _store(redis_url)
    broker = Broker(redis_url)
    try:
        job = submit_job(
            benchmark, config, store=store, broker=broker, checked=check_job(benchmark, config)
        )
    finally:
        broker.close()
    good, bad = benchmark.questions
    good_id = compute_template_id(good.answer_template)
    bad_id = compute_template_id(bad.answer_template)

    fresh = SandboxPool(SandboxSettings(pool_size=1, timeout=10))
    try:
        expected = fresh.load_template(good.answer_template or "", good.id).description()
    finally:
        fresh.close()
    start = store.begin_unit(job.job_id, "u1", template_id=good_id)
    assert start.status == JobStatus.RUNNING and start.template == expected
    refused = store.begin_unit(job.job_id, "u2", template_id=bad_id).template
    assert refused is not None and "os" in refused["problem"]
    assert store.begin_unit(job.job_id, "u3", template_id="unknown-id").template is None

    worker = SandboxPool(SandboxSettings(pool_size=1, timeout=10))
    try:
        good_source, bad_source = good.answer_template or "", bad.answer_template or ""
        assert start.template is not None and not worker.knows(good_source, scope=job.job_id)
        # Primed for the job that stored them, and used inside its scope.
        worker.prime(good_source, start.template, scope=job.job_id)
        worker.prime(bad_source, refused, scope=job.job_id)
        assert worker.knows(good_source, scope=job.job_id) and not worker.knows(good_source)
        with worker.scoped(job.job_id):
            handle = worker.load_template(good_source, good.id)
            assert handle.question_id == good.id and handle.description() == expected
            with pytest.raises(TemplateValidationError, match="os") as info:
                worker.load_template(bad_source, bad.id)
        assert info.value.question_id == bad.id
        assert worker.stats().described == 0  # no executor was asked to describe
        # ... and the template is compiled where it is evaluated.
        evaluation = worker.evaluate(handle, {"city": "Capital0"}, "The capital is Capital0.")
        assert evaluation.verification is not None and evaluation.verification.verify_result
    finally:
        worker.close()


def test_a_unit_started_again_before_it_finished_counts_a_further_try(redis_url: str) -> None:
    """What quarantines a unit that kills or freezes its workers: every start
    while an earlier one never finished is one more try; a finished unit and its
    redeliveries count nothing, and a first start costs no attempts entry."""
    store = _store(redis_url)
    store.create_job("j3", benchmark_json="{}", config_json="{}", total_units=2)
    assert [store.begin_unit("j3", "poison").tries for _ in range(4)] == [1, 2, 3, 4]
    assert store.begin_unit("j3", "fine").tries == 1
    attempts = store.client.hgetall(store.keys("j3").attempts)
    assert attempts == {b"poison": b"3"}  # a first start costs nothing here
    store.write_unit("j3", "fine", [make_result("q1", verified=True)], ["k1"])
    assert store.begin_unit("j3", "fine") == (JobStatus.RUNNING, True, None, 1)
    store.write_unit("j3", "poison", [make_result("q2", verified=True)], ["k2"])
    assert store.progress("j3").in_flight == 0 and store.status("j3") == JobStatus.DONE


def test_a_step_writes_the_finished_unit_before_taking_the_next_up(
    redis_url: str,
) -> None:
    """A worker thread running a message of several units writes each unit's
    results in the round trip that takes the next unit up: the same outcome as
    ``write_unit`` then ``begin_unit``, including for a redelivered message
    (a write already done adds nothing) and for the job's last write."""
    store = _store(redis_url)
    store.create_job("j4", benchmark_json="{}", config_json="{}", total_units=3)
    assert store.begin_unit("j4", "u1").tries == 1
    first = UnitWrite("u1", [make_result("q1", verified=True)], ["k1"])
    finished, (start,) = store.step_units("j4", [first], [("u2", None)])
    assert finished is False
    assert start == (JobStatus.RUNNING, False, None, 1)
    progress = store.progress("j4")
    assert (progress.done_units, progress.in_flight, progress.results) == (1, 1, 1)
    # A redelivered message: u1's write again (with another verdict) stores and
    # counts nothing; u2, in flight from the first delivery, is a further try.
    again = UnitWrite("u1", [make_result("q1", verified=False)], ["k1"])
    finished, (start,) = store.step_units("j4", [again], [("u2", None)])
    assert finished is False and start.tries == 2 and start.done is False
    assert [r.template.verify_result for r in store.iter_results("j4")] == [True]
    assert store.progress("j4").pairs[0].passed == 1
    # A failed result marks its unit failed; the write that finishes the job says so,
    # and the next unit's start finds it done already (a redelivery).
    store.write_unit("j4", "u3", [make_result("q3", verified=True)], ["k3"])
    failed = UnitWrite("u2", [make_result("q2", verified=None, error="boom")], ["k2"])
    finished, (start,) = store.step_units("j4", [failed], [("u3", None)])
    assert finished is True and start.done is True
    progress = store.progress("j4")
    assert progress.status == JobStatus.DONE
    assert (progress.done_units, progress.failed_units, progress.in_flight) == (3, 1, 0)


def test_a_step_of_a_cancelled_job_writes_but_starts_nothing(redis_url: str) -> None:
    store = _store(redis_url)
    store.create_job("j5", benchmark_json="{}", config_json="{}", total_units=2)
    store.begin_unit("j5", "u1")
    store.set_status("j5", JobStatus.CANCELLED)
    written = UnitWrite("u1", [make_result("q1", verified=True)], ["k1"])
    finished, (start,) = store.step_units("j5", [written], [("u2", None)])
    assert finished is False and start.status == JobStatus.CANCELLED
    progress = store.progress("j5")
    assert (progress.done_units, progress.results, progress.in_flight) == (1, 1, 0)


def test_a_step_writes_several_units_then_takes_several_up_in_one_round_trip(
    redis_url: str,
) -> None:
    """``step_units``: units with one and with two results written (each its
    verdicts, in order), then units taken up, each with its own start: a unit
    done already (no description for it) and one started before are told apart."""
    store = _store(redis_url)
    store.create_job("j6", benchmark_json="{}", config_json="{}", total_units=5)
    store.client.hset(store.keys("j6").templates, "t1", store._compress(b'{"d": 1}'))
    _, starts = store.step_units("j6", [], [("u1", None), ("u2", None), ("u3", None)])
    assert [s.tries for s in starts] == [1, 1, 1]
    assert store.progress("j6").in_flight == 3
    two = [make_result("q2", verified=False), make_result("q2", verified=None, error="x")]
    written = [
        UnitWrite("u1", [make_result("q1", verified=True)], ["k1"]),
        UnitWrite("u2", two, ["k2a", "k2b"]),
    ]
    finished, starts = store.step_units("j6", written, [("u3", None), ("u4", "t1"), ("u1", "t1")])
    assert finished is False
    # u3 was in flight from the first step and never finished: a further try.
    assert [(s.done, s.tries) for s in starts] == [(False, 2), (False, 1), (True, 1)]
    assert [s.template for s in starts] == [None, {"d": 1}, None]
    progress = store.progress("j6")
    assert (progress.done_units, progress.failed_units, progress.results) == (2, 1, 3)
    assert progress.in_flight == 2  # u3 and u4
    (pair,) = progress.pairs
    assert (pair.passed, pair.failed) == (1, 1)
    # The last writes finish the job, with nothing taken up.
    rest = [UnitWrite(u, [make_result(u, verified=True)], [f"k{u}"]) for u in ("u3", "u4", "u5")]
    finished, starts = store.step_units("j6", rest, [])
    assert finished is True and starts == []
    assert store.status("j6") == JobStatus.DONE
