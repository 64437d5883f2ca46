"""The demo benchmark against a real LLM: llama-server running SmolLM2-135M-Instruct
as answerer and judge, with the real embedding model and a rubric. Outcomes are
asserted loosely where the tiny model decides (how many pass) and strictly where
the system decides (every result completes, parses, records usage)."""

from __future__ import annotations

import pytest

from verifleet.orchestrator import LocalLLMServer
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.schemas import ModelConfig, VerificationConfig, load_benchmark

pytestmark = pytest.mark.integration


def test_demo_benchmark_against_the_local_llm(local_llm: LocalLLMServer) -> None:
    benchmark = load_benchmark("examples/demo/benchmark.yaml")
    model = ModelConfig.parse(local_llm.spec, max_tokens=512)
    config = VerificationConfig.build(
        answering_models=[model],
        parsing_models=[model],
        evaluation_mode="template_and_rubric",
        embedding_check_enabled=True,
        embedding_check_threshold=0.5,
        max_concurrency=4,
    )
    results = [r for _unit, rs in LocalRunner(benchmark, config).run() for r in rs]

    assert len(results) == len(benchmark.questions) == 12
    for r in results:
        assert r.metadata.completed_without_errors, r.metadata.error
        assert r.template is not None and r.rubric is not None
        assert r.template.raw_llm_response.strip()
        assert r.template.parsed_llm_response, r.metadata.question_id
        assert r.template.parsed_gt_response
        assert r.template.verify_result is not None
        usage = r.template.usage_metadata or {}
        assert usage["answer_generation"]["total_tokens"] > 0
        assert usage["parsing"]["total_tokens"] > 0
        assert usage["total"]["total_tokens"] >= usage["parsing"]["total_tokens"]
        assert set(r.rubric.get_all_trait_scores()) >= {"concise", "no_refusal"}
    assert any(r.template.verify_result for r in results if r.template)
    # The embedding check ran on the field failures, with the configured model.
    failed = [r for r in results if r.template and r.template.embedding_check_performed]
    assert all(r.template.embedding_model_used == "all-MiniLM-L6-v2" for r in failed)
    assert all(r.template.embedding_similarity_score is not None for r in failed)
