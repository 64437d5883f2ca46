"""The fleet end to end: a real redis-server, real ``verifleet worker`` processes,
real HTTP model calls. The model endpoint is the fault-injecting test double of
``bench/endpoint.py``: it is the only way to get deterministic answers, latency
and 5xx errors on demand without a GPU."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from _support.fleet import Fleet, run_cli
from _support.jobs import capitals_benchmark, comparable
from _support.redis_server import RedisServer

import verifleet
from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.orchestrator import read_manifest, read_results
from verifleet.orchestrator._fleet.job import Job
from verifleet.orchestrator._local.tally import PassRateTally
from verifleet.schemas import Benchmark, ModelConfig, VerificationConfig, dump_benchmark
from verifleet.store import JobStatus, expand_units

pytestmark = pytest.mark.integration


def _config(ep: RunningEndpoint, **extra: object) -> VerificationConfig:
    return VerificationConfig.build(
        answering_models=[ModelConfig.parse(f"{ep.base_url}#answerer")],
        parsing_models=[ModelConfig.parse(f"{ep.base_url}#judge")],
        **extra,
    )


def _expected_keys(bench: Benchmark, config: VerificationConfig, job_id: str) -> set[str]:
    keys: set[str] = set()
    for unit in expand_units(bench, config):
        keys.update(unit.result_keys(config.parsing_models, job_id))
    return keys


def _stored_keys(job: Job) -> list[str]:
    raw = job.store.client.hkeys(job.store.keys(job.job_id).results)
    return [k.decode() for k in raw]


def _wait_done_at_least(job: Job, n: int, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while (done := job.progress().done_units) < n:
        assert time.monotonic() < deadline, f"only {done} units done after {timeout}s"
        time.sleep(0.1)
    return done


def test_two_workers_complete_a_job_equal_to_a_local_run(
    fleet: Fleet, redis_url: str, tmp_path: Path
) -> None:
    bench, answers = capitals_benchmark(20)
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=20)) as ep:
        config = _config(ep, replicate_count=2)
        fleet.start_worker("w1", concurrency=4)
        fleet.start_worker("w2", concurrency=4)
        fleet.wait_ready(["w1", "w2"])
        # The top-level API: verifleet.submit on the fleet, verifleet.run in process.
        job = verifleet.submit(bench, config, redis_url)
        progress = job.wait(timeout=120)
        fleet_results = job.result_set()
        local = verifleet.run(bench, config).results
    assert isinstance(job, Job)
    assert progress.status == JobStatus.DONE
    assert (progress.done_units, progress.results, progress.failed_units) == (40, 40, 0)
    assert comparable(fleet_results) == comparable(local)
    verdicts = [r.template.verify_result for r in fleet_results if r.template]
    assert verdicts.count(True) == 30 and verdicts.count(False) == 10
    for name in ("w1", "w2"):
        assert "succeeded" in fleet.log(name), f"{name} ran no task"

    # The same job through the CLI a user would use to look at it and collect it.
    status = run_cli("status", job.job_id, "--redis", redis_url)
    assert status.returncode == 0 and "[done]  done 40/40" in status.stdout, status.stderr
    assert "75.0%" in status.stdout
    # The pass rate's interval with questions as clusters (2 replicates each),
    # from the same code as the end table of the local run of the same job.
    tally = PassRateTally()
    for result in local:
        tally.add(result)
    (counts,) = tally.pairs.values()
    interval = counts.interval()
    assert interval is not None and interval.method == "clustered"
    assert f"{interval.low:.1%}-{interval.high:.1%}" in " ".join(status.stdout.split())
    listing = run_cli("jobs", "--redis", redis_url)
    assert job.job_id in listing.stdout
    out = tmp_path / "collected.parquet"
    collected = run_cli("results", job.job_id, "--redis", redis_url, "--out", str(out))
    assert collected.returncode == 0 and "40 results written" in collected.stdout
    assert comparable(read_results(out)) == comparable(local)
    # The collected file holds the job's run manifest (in its footer and beside it).
    manifest = read_manifest(out)
    assert manifest is not None and manifest["job_id"] == job.job_id
    assert manifest["config"]["replicate_count"] == 2
    assert manifest["benchmark"]["questions"] == 20
    assert (tmp_path / "collected.parquet.manifest.json").is_file()
    missing = run_cli("status", "no-such-job", "--redis", redis_url)
    assert missing.returncode == 2 and "no job 'no-such-job'" in missing.stderr


# Messages of four units from every fill, whatever its size (by default only
# fills of 64 units or more of a job are packed): the units of a message run one
# after the other, taken up two at a time, each step's writes going with the
# next step's start (so a worker killed mid-message has written part of it).
BATCHED = {
    "VERIFLEET_FEED_SPREAD": "1",
    "VERIFLEET_UNITS_PER_MESSAGE": "4",
    "VERIFLEET_UNITS_PER_STEP": "2",
}


@pytest.mark.parametrize("packing", ["a unit per message", "four units per message"])
def test_killed_worker_loses_nothing_and_duplicates_nothing(
    fleet: Fleet, redis_url: str, packing: str
) -> None:
    """The unit deadline (so the broker's visibility timeout: 20 minutes) is far
    longer than the test: the victim's units can only come back in time through
    the liveness reaper, which notices the victim's heartbeat expire, or through
    the stall detector. The victim runs alone until it has written results, so
    every unit of the job is in its hands when it dies. With four units per
    message the victim dies in the middle of messages: their units done already
    are skipped, the rest (taken up, some never run) run once."""
    bench, answers = capitals_benchmark(24)
    batched = packing == "four units per message"
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=400)) as ep:
        config = _config(ep)
        slow_restore = {"VERIFLEET_UNIT_DEADLINE": "600", **(BATCHED if batched else {})}
        fleet.start_worker("victim", concurrency=4, **slow_restore)
        fleet.wait_ready(["victim"])
        job = Job.submit(bench, config, redis_url)
        _wait_done_at_least(job, 3)
        assert job.progress().in_flight > 0
        fleet.kill("victim")
        fleet.start_worker("survivor", concurrency=4, **slow_restore)
        # A message the victim had popped (BRPOP) but not yet recorded as unacked
        # is gone from Redis; the survivor's stall detector sends it again.
        progress = job.wait(timeout=150)
    assert progress.status == JobStatus.DONE
    stored = _stored_keys(job)
    assert len(stored) == len(set(stored)) == 24
    assert set(stored) == _expected_keys(bench, config, job.job_id)
    assert progress.results == 24 and progress.done_units == 24
    assert "taken by a worker that is gone" in fleet.log("survivor")
    logs = fleet.log("victim") + fleet.log("survivor")
    assert ("Task verifleet.run_units[" in logs) is batched
    if batched:
        # A message the survivor ran again found the units the victim finished.
        assert re.search(r"run_units\[[^\]]+\] succeeded in [\d.]+s: '[^']*already-done", logs)


@pytest.mark.parametrize("packing", ["a unit per message", "four units per message"])
def test_redis_restart_mid_job(
    fleet: Fleet, redis_url: str, redis_server: RedisServer | None, packing: str
) -> None:
    if redis_server is None:
        pytest.fail("this test needs its own redis-server; unset VERIFLEET_TEST_REDIS_URL")
    bench, answers = capitals_benchmark(24)
    batched = packing == "four units per message"
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=300)) as ep:
        config = _config(ep)
        fleet.start_worker("w1", concurrency=4, **(BATCHED if batched else {}))
        fleet.wait_ready(["w1"])
        job = Job.submit(bench, config, redis_url)
        _wait_done_at_least(job, 3)
        redis_server.restart()
        progress = job.wait(timeout=180)
    assert progress.status == JobStatus.DONE
    stored = _stored_keys(job)
    assert len(stored) == 24 and set(stored) == _expected_keys(bench, config, job.job_id)
    assert ("Task verifleet.run_units[" in fleet.log("w1")) is batched


#: What compiling q0004's template says: its module body raises. The static
#: checks ``submit`` makes by default cannot see it; ``--strict`` compiles.
LOADING_PROBLEM = "template raised ZeroDivisionError while loading: division by zero"


def _broken_benchmark(n: int) -> tuple[Benchmark, dict[str, object]]:
    """q0001 does not compile; q0003 imports a module templates may not use;
    q0004 parses and passes the guard but raises as its module body runs."""
    bench, answers = capitals_benchmark(n)
    bench.questions[1].answer_template = "class Answer(:\n    pass\n"
    bench.questions[3].answer_template = bench.questions[3].answer_template.replace(
        "from pydantic import Field", "import os\nfrom pydantic import Field"
    )
    bench.questions[4].answer_template = "_ = 1 / 0\n" + (bench.questions[4].answer_template or "")
    return bench, answers


def test_broken_templates_reject_the_job_with_strict(redis_url: str, tmp_path: Path) -> None:
    bench, _answers = _broken_benchmark(5)
    path = tmp_path / "broken.yaml"
    dump_benchmark(bench, path)
    proc = run_cli(
        "submit",
        str(path),
        "--answering",
        "http://127.0.0.1:9/v1#m",
        "--parsing",
        "http://127.0.0.1:9/v1#m",
        "--redis",
        redis_url,
        "--strict",
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "q0001" in proc.stderr and "q0003" in proc.stderr
    assert "os" in proc.stderr
    # --strict compiles: what only a compile finds rejects the job too.
    assert f"question q0004: template: {LOADING_PROBLEM}" in " ".join(proc.stderr.split())
    assert Job("nothing", redis_url).store.list_jobs() == []


def test_broken_templates_fail_only_their_question(
    fleet: Fleet, redis_url: str, tmp_path: Path
) -> None:
    bench, answers = _broken_benchmark(5)
    path = tmp_path / "broken.yaml"
    dump_benchmark(bench, path)
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        fleet.start_worker("w1", concurrency=4)
        fleet.wait_ready(["w1"])
        proc = run_cli(
            "submit",
            str(path),
            "--answering",
            f"{ep.base_url}#answerer",
            "--parsing",
            f"{ep.base_url}#judge",
            "--redis",
            redis_url,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "q0001" in proc.stderr and "q0003" in proc.stderr  # warned, not rejected
        # Submit compiled nothing: q0004 is found by its worker, and submit says so.
        said = " ".join(proc.stderr.split())
        assert "q0004" not in said
        assert "5 templates checked statically" in said and "the workers compile each" in said
        match = re.search(r"job (\S+):", proc.stdout)
        assert match is not None, proc.stdout
        job = Job(match.group(1), redis_url)
        progress = job.wait(timeout=120)
        assert progress.status == JobStatus.DONE and progress.failed_units == 3
    by_id = {r.metadata.question_id: r for r in job.iter_results()}
    assert set(by_id) == {"q0000", "q0001", "q0002", "q0003", "q0004"}
    for qid in ("q0001", "q0003", "q0004"):
        failed = by_id[qid]
        assert failed.metadata.completed_without_errors is False
        assert failed.template is not None and failed.template.template_validation_error
    assert "os" in (by_id["q0003"].metadata.error or "")
    # The worker's words for it are the compile's, as --strict gives them.
    assert by_id["q0004"].template is not None
    assert LOADING_PROBLEM in (by_id["q0004"].template.template_validation_error or "")
    for qid in ("q0000", "q0002"):
        assert by_id[qid].metadata.completed_without_errors is True


def test_endpoint_failures_become_errored_results(fleet: Fleet, redis_url: str) -> None:
    bench, answers = capitals_benchmark(30)
    endpoint = EndpointConfig(answers=answers, rate_5xx=0.3, seed=7)
    with run_endpoint_in_thread(endpoint) as ep:
        config = _config(ep, retry_policy={"max_attempts": 1})
        fleet.start_worker("w1", concurrency=8)
        fleet.wait_ready(["w1"])
        job = Job.submit(bench, config, redis_url)
        progress = job.wait(timeout=120)
    assert progress.status == JobStatus.DONE and progress.done_units == 30
    errored = [r for r in job.iter_results() if not r.metadata.completed_without_errors]
    assert 0 < len(errored) < 30
    assert progress.failed_units == len(errored)
    for r in errored:
        assert re.search(r"\b5\d\d\b .* after 1 attempt", r.metadata.error or ""), r.metadata.error


def test_cancel_stops_new_work_and_resume_finishes_the_rest(fleet: Fleet, redis_url: str) -> None:
    bench, answers = capitals_benchmark(30)
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=250)) as ep:
        config = _config(ep)
        fleet.start_worker("w1", concurrency=2)
        fleet.wait_ready(["w1"])
        job = Job.submit(bench, config, redis_url)
        _wait_done_at_least(job, 4)
        job.cancel()
        time.sleep(3)  # units in flight at cancel time finish; nothing new starts
        settled = job.progress().done_units
        time.sleep(2)
        after = job.progress()
        assert after.status == JobStatus.CANCELLED
        assert after.done_units == settled < 30
        resent = job.resume()
        assert resent == 30 - settled
        progress = job.wait(timeout=120)
    assert progress.status == JobStatus.DONE and progress.done_units == 30
    stored = _stored_keys(job)
    assert len(stored) == len(set(stored)) == 30
