"""Reward servers sharing one judge's endpoint limits through Redis.

``verifleet serve --workers N --redis URL`` runs N processes, each scoring on
its own event loop; with ``--redis`` their judge calls go through the fleet's
Redis call gate (wrapped by :class:`~verifleet.reward.LoopSafeGate`). Here two
scorers stand for two such processes: each has its own event loop (in its own
thread), its own Redis client and its own HTTP sender, built by the same
``reward_setup`` the server uses. Each alone would hold up to the judge's
``max_concurrency`` calls in flight (its sender's cap): only the shared gate keeps
the two together at it. The judge is the bench endpoint, whose peak in-flight
count is what its owner would see; Redis is a real redis-server. Nothing here
asserts a duration.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import threading
from pathlib import Path

import pytest
from _support.reward import CORRECT, JUDGE_ANSWERS, WRONG, geo_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.limits import RedisCallGate
from verifleet.orchestrator.cli import build_parser
from verifleet.orchestrator.cli._reward_args import reward_setup
from verifleet.pipeline import run_bridged
from verifleet.reward import LoopSafeGate, PlainVerifyRequest, RewardScorer
from verifleet.schemas import ModelConfig, dump_benchmark

pytestmark = pytest.mark.integration

CAP = 3


def _scorer(args: argparse.Namespace, judge: ModelConfig, redis_url: str) -> RewardScorer:
    """A scorer as `verifleet serve` builds it (no Redis when `redis_url` is empty)."""
    with contextlib.ExitStack() as stack:
        return reward_setup(
            args, stack, redis_url=redis_url or None, models=[judge], shared_limits=60.0
        )


def _score_all(scorer: RewardScorer, texts: list[str]) -> list[float | None]:
    async def main() -> list[float | None]:
        requests = [PlainVerifyRequest(question_id="geo", response=t) for t in texts]
        scored = await asyncio.gather(*(run_bridged(scorer.score, r) for r in requests))
        return [s.reward for s in scored]

    return asyncio.run(main())


def test_two_server_processes_share_the_judges_endpoint_limit(
    redis_url: str, tmp_path: Path
) -> None:
    bench = tmp_path / "geo.yaml"
    dump_benchmark(geo_benchmark(), bench)
    # Each call stays in flight long enough that 12 concurrent requests per
    # process would overlap far beyond the cap without the shared gate.
    config = EndpointConfig(answers=JUDGE_ANSWERS, latency_ms=60)
    with run_endpoint_in_thread(config) as endpoint:
        judge = ModelConfig.parse(
            f"{endpoint.base_url}#judge",
            temperature=0.0,
            max_concurrency=CAP,
            adaptive_concurrency=False,
        )
        args = build_parser().parse_args(["serve", str(bench), "--parsing", "unused"])
        scorers = [_scorer(args, judge, redis_url) for _ in range(2)]
        assert all(isinstance(s.resources.call_gate, LoopSafeGate) for s in scorers)
        assert all(
            isinstance(s.resources.call_gate.inner, RedisCallGate)  # type: ignore[union-attr]
            for s in scorers
        )
        batches = [
            [f"{CORRECT if i % 2 else WRONG} (process {p}, rollout {i})" for i in range(12)]
            for p in range(2)
        ]
        rewards: list[list[float | None]] = [[], []]

        def process(index: int) -> None:
            rewards[index] = _score_all(scorers[index], batches[index])

        threads = [threading.Thread(target=process, args=(p,)) for p in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        stats = endpoint.stats()
    expected = [1.0 if i % 2 else 0.0 for i in range(12)]
    assert rewards == [expected, expected]
    assert stats.calls == 24  # every response judged once, none refused or retried
    assert stats.peak_in_flight == CAP  # reached, never exceeded across both processes


def test_a_worker_process_scorer_runs_the_benchmarks_templates_in_its_scope(
    tmp_path: Path,
) -> None:
    # Each --workers process builds its own scorer from the parent's plan (as JSON):
    # it must keep the benchmark's sandbox scope (one warm template process per
    # executor), or every template of a large benchmark is compiled again in a
    # process of its own, call after call.
    from verifleet.orchestrator.cli._reward_args import reward_recipe
    from verifleet.orchestrator.cli.serve import server_plan
    from verifleet.reward.serve import ServerPlan, build_app

    bench = tmp_path / "geo.yaml"
    dump_benchmark(geo_benchmark(), bench)
    args = build_parser().parse_args(["serve", str(bench), "--parsing", "unused"])
    judge = ModelConfig.parse("http://127.0.0.1:9/v1#judge", temperature=0.0)
    with contextlib.ExitStack() as stack:
        recipe, benchmark = reward_recipe(args, stack, redis_url=None, models=[judge])
    scorer = recipe.build(benchmark)
    # What worker_app reads from SERVE_STATE_ENV, then builds (after its sandbox start).
    plan = ServerPlan.model_validate_json(server_plan(args, recipe, []).model_dump_json())
    served = build_app(plan, plan.scorer.build()).routes_fast.scorer
    assert scorer.sandbox_scope is not None and scorer.sandbox_scope.startswith("serve-")
    assert served.sandbox_scope == scorer.sandbox_scope
    assert served.parsing_models == scorer.parsing_models
