"""The unit's identity in one place: the keys a unit's results are stored under
(what the workers write), the keys local resume finds in an output, and the
``result_key`` column of an export agree in every evaluation mode.

``rubric_only`` is the case that used to break: its results carry the template id
``"no_template"`` while the unit's keys were derived from the question's template.
Real HTTP calls to the scripted endpoint of ``bench/endpoint.py`` (deterministic
answers without a GPU).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import write_results
from verifleet.orchestrator._local.output import RunOutput
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.schemas import JobSpec, ModelConfig, RegexTrait, Rubric, VerificationConfig
from verifleet.store import result_key

pytestmark = pytest.mark.integration

MODES = ["template_only", "template_and_rubric", "rubric_only"]


@pytest.mark.parametrize("mode", MODES)
def test_resume_and_export_agree_with_the_stored_keys(mode: str, tmp_path: Path) -> None:
    bench, answers = capitals_benchmark(3)
    bench = bench.model_copy(
        update={"global_rubric": Rubric(regex_traits=[RegexTrait(name="says", pattern="capital")])}
    )
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        config = VerificationConfig.build(
            answering_models=[ModelConfig.parse(f"{ep.base_url}#answerer")],
            parsing_models=[
                ModelConfig.parse(f"{ep.base_url}#judge"),
                ModelConfig.parse(f"{ep.base_url}#judge2"),
            ],
            evaluation_mode=mode,
            replicate_count=2,
        )
        spec = JobSpec(bench, config)
        # What a worker stores each unit's results under, for job "job-1".
        stored = {k for u in spec.units() for k in spec.result_keys(u, "job-1")}
        assert len(stored) == 3 * 2 * 2

        out = RunOutput(tmp_path / "out.parquet")
        runner = LocalRunner(bench, config)
        produced = []
        for _unit, results in runner.run():
            out.record(results)
            produced.extend(results)
        assert all(r.metadata.completed_without_errors for r in produced), [
            r.metadata.error for r in produced
        ]
        if mode == "rubric_only":
            assert {r.metadata.template_id for r in produced} == {"no_template"}
        assert out.finalize() == 12

        # Local resume: every unit is found done, none runs again.
        skipped = []
        again = list(
            LocalRunner(bench, config).run(done_keys=out.done_keys(), on_skip=skipped.append)
        )
        assert again == [] and len(skipped) == 6

    # The key of a finished result is the key its unit was stored under.
    assert {result_key(r, job_id="job-1") for r in produced} == stored
    # And the export's result_key column says the same.
    path = tmp_path / "export.parquet"
    write_results(produced, path, job_id="job-1")
    assert set(pq.read_table(path, columns=["result_key"]).column(0).to_pylist()) == stored
