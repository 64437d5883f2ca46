"""One job cannot plant what another job's units use: a real redis-server, a
real ``verifleet worker``, the scripted endpoint of bench/endpoint.py (the only
way to get the same judge replies for two jobs in a row)."""

from __future__ import annotations

import json

import pytest
import zstandard
from _support.fleet import Fleet
from _support.jobs import capitals_benchmark, comparable

import verifleet
from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator._fleet.job import Job
from verifleet.schemas import ModelConfig, VerificationConfig
from verifleet.store import JobStatus

pytestmark = pytest.mark.integration


def test_a_description_planted_by_one_job_is_never_used_for_another(
    fleet: Fleet, redis_url: str
) -> None:
    """The attacker submits the victim's templates and, with its own Redis
    client (a tenant submits with one), replaces the descriptions stored with
    its job: a refusal for one template, a false ground truth for another. Its
    units run first on the one worker process there is; the victim's job after
    it on that process gets the verdicts of a local run."""
    bench, answers = capitals_benchmark(3)
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        config = VerificationConfig.build(
            answering_models=[ModelConfig.parse(f"{ep.base_url}#answerer")],
            parsing_models=[ModelConfig.parse(f"{ep.base_url}#judge")],
        )
        # Strict: its templates are compiled and their descriptions stored,
        # the honest ones the attacker rewrites (a job submitted otherwise
        # stores none, and the attacker could write them all the same).
        attacker = Job.submit(bench, config, redis_url, strict=True)
        store = attacker.store
        stored = store.keys(attacker.job_id).templates
        refused, misled = bench.questions[0].template_id, bench.questions[1].template_id
        honest = json.loads(
            zstandard.ZstdDecompressor().decompress(store.client.hget(stored, misled))
        )
        planted = {
            refused: {"problem": "planted refusal"},
            misled: dict(honest, ground_truth={"city": "Planted"}),
        }
        compress = zstandard.ZstdCompressor().compress
        store.client.hset(
            stored, mapping={k: compress(json.dumps(v).encode()) for k, v in planted.items()}
        )

        fleet.start_worker("w1", concurrency=1)
        fleet.wait_ready(["w1"])
        assert attacker.wait(timeout=120).status == JobStatus.DONE
        # The plant took: the attacker's own units used it (its own job only).
        mine = {r.metadata.question_id: r for r in attacker.iter_results()}
        assert "planted refusal" in (mine["q0000"].metadata.error or "")
        assert mine["q0001"].template is not None
        assert mine["q0001"].template.parsed_gt_response == {"city": "Planted"}

        victim = verifleet.submit(bench, config, redis_url)
        assert victim.wait(timeout=120).status == JobStatus.DONE
        local = verifleet.run(bench, config).results
    theirs = victim.result_set()
    assert comparable(theirs) == comparable(local)
    by_id = {r.metadata.question_id: r for r in theirs}
    assert all(r.metadata.completed_without_errors for r in theirs)
    assert by_id["q0001"].template is not None
    assert by_id["q0001"].template.parsed_gt_response == {"city": "Capital1"}
    assert by_id["q0001"].template.verify_result is True
    assert victim.progress().failed_units == 0
