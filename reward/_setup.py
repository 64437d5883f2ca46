"""The scorer of a reward service or a rollout file: its judge cache and endpoint
limits (shared through Redis when given), its sandbox scope, and the reward config
a benchmark carries.

``verifleet serve``, its ``--workers`` processes and ``verifleet reward`` build
their scorer here, from a :class:`ScorerRecipe`; the CLI only reads the flags (the
benchmark, the judges, the cost options) into one.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from verifleet.limits import RedisCallGate
from verifleet.pipeline import CallCache, DiskCallCache
from verifleet.schemas import Benchmark, ModelConfig, load_benchmark, load_pricing
from verifleet.store import RedisCallCache, RedisTarget

from ._config import RewardConfig, load_reward_config
from ._loop_gate import LoopSafeGate
from ._scorer import RewardScorer, reward_resources

__all__ = ["ScorerRecipe", "build_scorer", "reward_config_for"]


def reward_config_for(path: Path | None, metadata: Mapping[str, object]) -> RewardConfig:
    """The file's config, else the benchmark's own (``custom_metadata.reward``),
    else binary rewards.

    Raises:
        ConfigError: the file or the benchmark's config is invalid.
    """
    if path is not None:
        return load_reward_config(path)
    if "reward" in metadata:
        return RewardConfig.build(metadata["reward"])
    return RewardConfig()


def build_scorer(
    benchmark: Benchmark,
    models: Sequence[ModelConfig],
    reward: RewardConfig,
    *,
    redis_url: str | None = None,
    shared_limits: float | None = None,
    inline_executors: int = 0,
    config_update: Mapping[str, object] | None = None,
    call_cache: CallCache | None = None,
) -> RewardScorer:
    """The scorer for ``benchmark`` (the service's one job: its templates share a
    warm template process per executor) and its judges. Its judge calls go
    through ``call_cache`` when given (``--cache``: the local file), else the
    fleet's call cache in Redis with ``redis_url``, else an in-process LRU. With
    ``shared_limits`` (the seconds one request may take) the judges' endpoint
    limits are shared through Redis too (the fleet's call gate).
    ``config_update`` sets verification config fields (``pricing``,
    ``max_cost_usd``; the scorer's ``cache`` is always on).

    Raises:
        ConfigError: the reward config does not fit the benchmark, or a
            malformed Redis URL.
        RedisAccessError: Redis is unreachable or refuses the password or TLS.
    """
    gate = None
    cache = call_cache
    if redis_url:
        target = RedisTarget.parse(redis_url)
        target.check()  # a wrong password or CA fails here, not on the first request
        client = target.client()
        if cache is None:
            cache = RedisCallCache(client)
        if shared_limits is not None:
            # The fleet's endpoint limits (window, budgets, pauses), shared by
            # every --workers process and by the fleet's workers on the same
            # Redis. A lease outlives the request (and so its judge calls); a
            # call waits for its slot at most as long as its request may take.
            gate = LoopSafeGate(
                RedisCallGate(client, lease_seconds=shared_limits + 30.0, max_wait=shared_limits)
            )
    resources = reward_resources(cache, call_gate=gate)
    # The operator's benchmark is the server's one job: its templates share a
    # warm template process per executor (a template process per source, as
    # for inline questions, meant a fork and a compile for most calls of a
    # benchmark with more templates than an executor keeps processes).
    scope = (
        "serve-"
        + hashlib.sha256(
            "\0".join(q.answer_template or "" for q in benchmark.questions).encode()
        ).hexdigest()[:16]
    )
    scorer = RewardScorer(
        benchmark,
        models,
        reward,
        resources=resources,
        sandbox_scope=scope,
        inline_executors=inline_executors,
    )
    if config_update:
        update = {k: v for k, v in config_update.items() if k != "cache"}
        scorer.config = scorer.config.model_copy(update=update)
        # Units run against the scorer's spec: it must carry the same config.
        scorer.spec = dataclasses.replace(scorer.spec, config=scorer.config)
    return scorer


class ScorerRecipe(BaseModel):
    """Everything a scorer is built from, as JSON: ``verifleet serve --workers N``
    hands it to each of its processes, which build the same scorer from it.

    Attributes:
        benchmark: The benchmark file.
        trust_callables: Whether pickled callable rubric traits may load.
        judges: The judge models (the reward is their mean when several).
        reward_config: A reward config file; None: the benchmark's own
            (``custom_metadata.reward``), else binary rewards.
        redis_url: The fleet's Redis: the judge-call cache lives there.
        shared_limits: With ``redis_url``, the seconds one request may take;
            the judges' endpoint limits are then shared through Redis too.
        inline_executors: Executors of their own for inline questions.
        pricing: A price table file (``--pricing``).
        local_cache: Keep the judge calls in the local cache file (``--cache``;
            with ``redis_url`` they are in Redis either way).
    """

    model_config = ConfigDict(frozen=True)

    benchmark: Path
    trust_callables: bool = False
    judges: list[ModelConfig]
    reward_config: Path | None = None
    redis_url: str | None = None
    shared_limits: float | None = None
    inline_executors: int = 0
    pricing: Path | None = None
    local_cache: bool = False

    def load_benchmark(self) -> Benchmark:
        """The benchmark, its templates unchecked (a question whose template does
        not compile fails alone, in its results).

        Raises:
            BenchmarkLoadError: the file cannot be loaded.
        """
        return load_benchmark(
            self.benchmark, trust_callables=self.trust_callables, validate_templates=False
        )

    def build(self, benchmark: Benchmark | None = None) -> RewardScorer:
        """The scorer (:func:`build_scorer`), for ``benchmark`` when the caller
        loaded it already.

        Raises:
            BenchmarkLoadError: the benchmark cannot be loaded.
            ConfigError: an invalid reward config or price table, or a malformed
                Redis URL.
            RedisAccessError: Redis is unreachable or refuses the password or TLS.
        """
        if benchmark is None:
            benchmark = self.load_benchmark()
        update: dict[str, object] = {}
        if self.pricing is not None:
            update["pricing"] = load_pricing(self.pricing)
        local = self.local_cache and not self.redis_url
        return build_scorer(
            benchmark,
            self.judges,
            reward_config_for(self.reward_config, benchmark.custom_metadata),
            redis_url=self.redis_url,
            shared_limits=self.shared_limits,
            inline_executors=self.inline_executors,
            config_update=update,
            call_cache=DiskCallCache() if local else None,
        )
