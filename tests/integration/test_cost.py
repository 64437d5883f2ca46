"""Costs from a price table: every call's tokens at its model's price, summed per
result and per job without counting an answer shared by two judges twice. The
endpoint is the scripted double of ``bench/endpoint.py``, which reports token
usage for every call (a real model's usage could not be predicted here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.fleet import run_cli
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import read_results
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.schemas import (
    ConfigError,
    CostSummary,
    ModelConfig,
    PriceTable,
    VerificationConfig,
    dump_benchmark,
    load_pricing,
)

pytestmark = pytest.mark.integration

PRICES = {
    "as_of": "2026-01-01",
    "models": {
        "answerer": {"input": 1.0, "output": 4.0},
        "judge-a": {"input": 0.5, "output": 2.0, "cached_input": 0.1},
        "judge-b": {"input": 3.0, "output": 9.0},
    },
}


def _price(model: str, entry: dict) -> float:
    p = PRICES["models"][model]
    return (entry["input_tokens"] * p["input"] + entry["output_tokens"] * p["output"]) / 1e6


def test_cost_per_result_and_job_is_usage_times_price() -> None:
    bench, answers = capitals_benchmark(6, wrong_every=0)
    table = PriceTable.model_validate(PRICES)
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        answering = ModelConfig.parse(f"{ep.base_url}#answerer")
        judges = [
            ModelConfig.parse(f"{ep.base_url}#judge-a"),
            ModelConfig.parse(f"{ep.base_url}#judge-b"),
        ]
        config = VerificationConfig.build(
            answering_models=[answering], parsing_models=judges, pricing=table
        )
        results = [r for _u, rs in LocalRunner(bench, config).run() for r in rs]
        calls = ep.stats().calls
    assert len(results) == 12 and calls == 6 * 3, "one answer and two parses per unit"
    expected_job = 0.0
    answers_paid: set[str] = set()
    for r in results:
        usage = r.template.usage_metadata
        assert usage is not None
        parse = usage["parsing"]
        assert parse["cost_usd"] == pytest.approx(_price(parse["model"], parse))
        answer = usage["answer_generation"]
        # The unit's answer is paid once: by whichever result generated it.
        if answer["cost_usd"]:
            assert answer["cost_usd"] == pytest.approx(_price("answerer", answer))
            answers_paid.add(r.metadata.question_id)
        expected_job += _price(parse["model"], parse)
        assert usage["total"]["cost_usd"] == pytest.approx(parse["cost_usd"] + answer["cost_usd"])
    assert len(answers_paid) == 6
    per_question = {r.metadata.question_id: r for r in results}
    expected_job += sum(
        _price("answerer", per_question[q].template.usage_metadata["answer_generation"])
        for q in answers_paid
    )
    summary = CostSummary()
    for r in results:
        summary.add(r)
    assert summary.total_usd == pytest.approx(expected_job)
    assert set(summary.models) == {"answerer", "judge-a", "judge-b"}
    assert summary.unpriced_models() == []


def test_cached_input_tokens_are_priced_at_the_cached_price() -> None:
    table = PriceTable.model_validate(PRICES)
    assert table.cost("judge-a", 1000, 100, 400) == pytest.approx(
        (600 * 0.5 + 400 * 0.1 + 100 * 2.0) / 1e6
    )
    # Without a cached price they cost the input price; provider prefixes are found.
    assert table.cost("openai:judge-b", 1000, 0, 400) == pytest.approx(1000 * 3.0 / 1e6)
    assert table.cost("unknown", 1, 1) is None


def test_a_price_table_that_is_wrong_is_refused_naming_the_model(tmp_path: Path) -> None:
    bad = tmp_path / "prices.yaml"
    bad.write_text("models:\n  gpt-x: {input: -1, output: 2}\n")
    with pytest.raises(ConfigError, match=r"models\.gpt-x\.input"):
        load_pricing(bad)
    bad.write_text("models:\n  gpt-x: {input: 1}\n")
    with pytest.raises(ConfigError, match=r"gpt-x\.output"):
        load_pricing(bad)
    assert load_pricing(Path("examples/pricing.yaml")).as_of


def test_run_prints_costs_per_model_and_writes_the_cost_column(tmp_path: Path) -> None:
    bench, answers = capitals_benchmark(4, wrong_every=0)
    path = tmp_path / "bench.yaml"
    dump_benchmark(bench, path)
    prices = tmp_path / "prices.yaml"
    prices.write_text("as_of: 2026-01-01\nanswerer: {input: 1.0, output: 4.0}\n")
    out = tmp_path / "out.parquet"
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        done = run_cli(
            "run",
            str(path),
            "--answering",
            f"{ep.base_url}#answerer",
            "--parsing",
            f"{ep.base_url}#judge",
            "--pricing",
            str(prices),
            "--out",
            str(out),
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "prices as of 2026-01-01" in done.stderr
    assert "no price for judge" in done.stderr
    results = read_results(out)
    summary = CostSummary()
    for r in results:
        summary.add(r)
    assert f"total: ${summary.total_usd:.6f}" in done.stderr
    assert summary.total_usd > 0

    import pyarrow.parquet as pq

    table = pq.read_table(out, columns=["cost_usd", "cache_hits"])
    assert sum(table.column("cost_usd").to_pylist()) == pytest.approx(summary.total_usd)
