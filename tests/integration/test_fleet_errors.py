"""Fleet jobs whose units errored, as a user meets them through the CLI: a real
redis-server, real ``verifleet worker`` processes and the fault-injecting endpoint
of ``bench/`` (the only way to get 503s for every call, then none, on demand).

``submit`` checks the models first; ``resume --retry-errors`` re-runs the errored
units and stores each result once; ``status`` shows a real rate; ``delete`` and
``--ttl`` remove jobs from Redis."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import redis
from _support.fleet import Fleet, run_cli
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator._fleet.job import Job
from verifleet.schemas import dump_benchmark
from verifleet.store import JobStatus

pytestmark = pytest.mark.integration


def _submit(redis_url: str, tmp_path: Path, model: str, *extra: str) -> str:
    bench, _ = capitals_benchmark(6, wrong_every=0)
    path = tmp_path / "bench.yaml"
    dump_benchmark(bench, path)
    config = tmp_path / "config.yaml"
    config.write_text("retry_policy:\n  max_attempts: 1\n")
    proc = run_cli(
        "submit",
        str(path),
        "--answering",
        model,
        "--parsing",
        model,
        "--config",
        str(config),
        "--redis",
        redis_url,
        *extra,
        timeout=300,  # a shared 2-core machine: a submit can take a minute
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    match = re.search(r"job (\S+): 6 units enqueued", proc.stdout)
    assert match, proc.stdout
    return match.group(1)


def test_submit_refuses_a_model_that_does_not_answer(redis_url: str, tmp_path: Path) -> None:
    bench, _ = capitals_benchmark(2)
    path = tmp_path / "bench.yaml"
    dump_benchmark(bench, path)
    proc = run_cli(
        "submit",
        str(path),
        "--answering",
        "http://127.0.0.1:9/v1#nobody-home",
        "--parsing",
        "http://127.0.0.1:9/v1#nobody-home",
        "--redis",
        redis_url,
    )
    assert proc.returncode == 2 and "preflight" in proc.stderr, proc.stderr[-2000:]
    assert "nobody-home" in proc.stderr
    listing = run_cli("jobs", "--redis", redis_url)
    assert "nobody" not in listing.stdout and "units" in listing.stdout


def test_resume_retry_errors_reruns_errored_units_and_stores_each_result_once(
    fleet: Fleet, redis_url: str, tmp_path: Path
) -> None:
    _bench, answers = capitals_benchmark(6, wrong_every=0)
    with run_endpoint_in_thread(EndpointConfig(answers=answers, rate_5xx=1.0)) as ep:
        fleet.start_worker("w1", concurrency=4)
        fleet.wait_ready(["w1"])
        job_id = _submit(redis_url, tmp_path, f"{ep.base_url}#m", "--no-preflight")
        job = Job(job_id, redis_url)
        first = job.wait(timeout=120)
        assert (first.done_units, first.failed_units) == (6, 6)

        status = run_cli("status", job_id, "--redis", redis_url)
        rate = re.search(r"rate ([0-9.]+) units/s", status.stdout)
        assert rate and float(rate.group(1)) > 0, status.stdout
        assert "ETA -" in status.stdout  # done: nothing left

        plain = run_cli("resume", job_id, "--redis", redis_url)
        assert "0 units re-enqueued" in plain.stdout, plain.stdout  # errors count as done

        ep.app.config.rate_5xx = 0.0  # the endpoint recovers
        retried = run_cli("resume", job_id, "--redis", redis_url, "--retry-errors")
        assert retried.returncode == 0, retried.stderr[-2000:]
        assert "6 units re-enqueued" in retried.stdout, retried.stdout
        second = job.wait(timeout=120)
    assert second.status == JobStatus.DONE
    assert (second.done_units, second.failed_units, second.results) == (6, 0, 6)
    results = list(job.iter_results())
    assert len(results) == 6
    assert all(r.metadata.completed_without_errors for r in results)
    (pair,) = second.pairs
    assert (pair.passed, pair.failed, pair.errors) == (6, 0, 0)


def test_delete_removes_a_job_and_refuses_a_running_one_without_force(
    fleet: Fleet, redis_url: str, tmp_path: Path
) -> None:
    _bench, answers = capitals_benchmark(6, wrong_every=0)
    client = redis.Redis.from_url(redis_url)
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        # No worker yet: the job stays queued.
        job_id = _submit(redis_url, tmp_path, f"{ep.base_url}#m")
        refused = run_cli("delete", job_id, "--redis", redis_url)
        assert refused.returncode == 2 and "--force" in refused.stderr, refused.stderr
        forced = run_cli("delete", job_id, "--redis", redis_url, "--force")
        assert forced.returncode == 0, forced.stderr[-2000:]
        assert not list(client.scan_iter(match=f"vf:job:{job_id}:*"))
        missing = run_cli("status", job_id, "--redis", redis_url)
        assert missing.returncode == 2 and "no job" in missing.stderr

        # A job with a TTL goes once it has been finished that long.
        fleet.start_worker("w1", concurrency=4)
        fleet.wait_ready(["w1"])
        kept = _submit(redis_url, tmp_path, f"{ep.base_url}#m")
        brief = _submit(redis_url, tmp_path, f"{ep.base_url}#m", "--ttl", "1s")
        Job(kept, redis_url).wait(timeout=120)
        Job(brief, redis_url).wait(timeout=120)
        time.sleep(2.1)  # past the TTL (finished times have whole seconds)
        listing = run_cli("jobs", "--redis", redis_url)
    assert listing.returncode == 0, listing.stderr[-2000:]
    assert f"deleted 1 expired job(s): {brief}" in listing.stdout
    assert kept in listing.stdout
    assert not list(client.scan_iter(match=f"vf:job:{brief}:*"))
    assert list(client.scan_iter(match=f"vf:job:{kept}:*"))
