"""Search-enhanced deep judgment runs offline with the local BM25 provider, for
templates and for rubric traits, through the whole pipeline (real HTTP to the
deterministic endpoint of bench/endpoint.py); without a usable provider the
rubric trait says why instead of silently skipping search."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_top_level_api import QUESTION, TEMPLATE

import verifleet
from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.schemas import (
    Benchmark,
    LLMRubricTrait,
    ModelConfig,
    Question,
    Rubric,
    VerificationConfig,
    VerificationResult,
)

pytestmark = pytest.mark.integration

RESPONSE = "It is BCL2."
FACT = "BCL2 is the gene of the anti-apoptotic protein."


@pytest.fixture(scope="module")
def endpoint() -> Iterator[RunningEndpoint]:
    answers = {
        QUESTION: {"text": RESPONSE, "fields": {"gene": "BCL2"}},
        # Rubric deep-judgment prompts quote the response, not the question.
        RESPONSE: {"text": RESPONSE, "fields": {"score": True}},
    }
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as running:  # type: ignore[arg-type]
        yield running


def _run(endpoint: RunningEndpoint, **fields: Any) -> VerificationResult:
    model = ModelConfig(
        model_name="fake-model", interface="openai_endpoint", endpoint_base_url=endpoint.base_url
    )
    grounded = LLMRubricTrait(
        name="grounded",
        kind="boolean",
        description="Claims are supported",
        deep_judgment_enabled=True,
        deep_judgment_search_enabled=True,
    )
    benchmark = Benchmark(
        name="search",
        questions=[Question(id="good", text=QUESTION, answer_template=TEMPLATE)],
        global_rubric=Rubric(llm_traits=[grounded]),
    )
    config = VerificationConfig(
        answering_models=[model],
        parsing_models=[model],
        evaluation_mode="template_and_rubric",
        deep_judgment_rubric_mode="use_checkpoint",
        **fields,
    )
    [result] = verifleet.run(benchmark, config).results
    return result


def test_template_and_rubric_search_run_offline(endpoint: RunningEndpoint, tmp_path: Path) -> None:
    (tmp_path / "bcl2.txt").write_text(FACT)
    result = _run(
        endpoint,
        deep_judgment_enabled=True,
        deep_judgment_search_enabled=True,
        deep_judgment_search_tool="local",
        deep_judgment_rubric_search_tool="local",
        deep_judgment_search_documents=str(tmp_path),
    )
    assert result.metadata.error is None
    template = result.deep_judgment
    assert template is not None and template.deep_judgment_stages_completed is not None
    assert "hallucination_assessment" in template.deep_judgment_stages_completed
    assert template.hallucination_risk_assessment == {"gene": "none"}
    assert template.extracted_excerpts is not None
    assert FACT in template.extracted_excerpts["gene"][0]["search_results"]
    rubric = result.deep_judgment_rubric
    assert rubric is not None
    assert rubric.rubric_hallucination_risk_assessment == {
        "grounded": {"overall_risk": "none", "per_excerpt_risks": ["none"]}
    }
    assert rubric.extracted_rubric_excerpts is not None
    assert FACT in rubric.extracted_rubric_excerpts["grounded"][0]["search_results"]
    assert rubric.deep_judgment_rubric_scores == {"grounded": True}


def test_without_a_usable_provider_the_trait_says_why(
    endpoint: RunningEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    result = _run(endpoint)  # rubric search asks for tavily, and there is no key
    rubric = result.deep_judgment_rubric
    assert rubric is not None and rubric.trait_metadata is not None
    meta = rubric.trait_metadata["grounded"]
    assert "TAVILY_API_KEY" in meta["search_skipped"]
    assert rubric.deep_judgment_rubric_scores == {"grounded": True}  # scored without search
    # Template deep judgment with search on fails its parse, saying why.
    failed = _run(endpoint, deep_judgment_enabled=True, deep_judgment_search_enabled=True)
    assert failed.metadata.completed_without_errors is False
    assert "TAVILY_API_KEY" in (failed.metadata.error or "")
