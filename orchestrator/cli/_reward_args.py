"""The flags ``serve`` and ``reward`` share, and the scorer they name (its
recipe, :class:`verifleet.reward.ScorerRecipe`, builds it)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from verifleet.errors import ConfigError

from ._sandbox import add_sandbox_argument
from .config import LOCAL, add_cost_arguments, missing_credentials

if TYPE_CHECKING:
    from verifleet.reward import RewardScorer, ScorerRecipe
    from verifleet.schemas import Benchmark, ModelConfig

# The reward stack and the schemas are imported by the functions that use them:
# `--help` must not pay for them.

__all__ = [
    "add_reward_arguments",
    "checked_scorer",
    "judge_models",
    "reward_recipe",
    "reward_setup",
]


def add_reward_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags ``serve`` and ``reward`` share."""
    add_sandbox_argument(parser)
    parser.add_argument(
        "--parsing",
        nargs="+",
        metavar="MODEL",
        default=[LOCAL],
        help="judge model(s): provider:model, http(s)://url#model, or 'local' (the bundled "
        "SmolLM2 on a llama-server this command starts; the default)",
    )
    parser.add_argument(
        "--reward-config",
        type=Path,
        help="YAML/JSON reward config (default: the benchmark's custom_metadata.reward, "
        "else binary)",
    )
    parser.add_argument(
        "--trust-callables",
        action="store_true",
        help="allow pickled callable rubric traits (unpickling runs arbitrary code)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse the benchmark when a question's template does not compile or is refused "
        "(default: that question's rollouts fail, with the error in their results)",
    )
    add_cost_arguments(parser, budget=False)


def judge_models(specs: list[str], stack: contextlib.ExitStack) -> list[ModelConfig]:
    """Judge models from command-line specs, at temperature 0. ``local`` starts the
    bundled model, which stays up until ``stack`` closes.

    Raises:
        ConfigError: a spec has none of the accepted forms.
        LocalLLMError: the local model cannot be started.
    """
    from verifleet.schemas import ModelConfig

    local_spec: str | None = None
    models = []
    for spec in specs:
        if spec == LOCAL:
            if local_spec is None:
                from verifleet.orchestrator import LocalLLMServer

                print("starting the local model (llama.cpp server + SmolLM2) ...", file=sys.stderr)
                local_spec = stack.enter_context(LocalLLMServer()).spec
            # A tiny model needs room for structured JSON replies.
            models.append(ModelConfig.parse(local_spec, temperature=0.0, max_tokens=512))
        else:
            models.append(ModelConfig.parse(spec, temperature=0.0))
    return models


def reward_setup(
    args: argparse.Namespace,
    stack: contextlib.ExitStack,
    *,
    redis_url: str | None,
    models: list[ModelConfig] | None = None,
    shared_limits: float | None = None,
) -> RewardScorer:
    """The scorer named by the flags: :func:`reward_recipe`, then
    :func:`checked_scorer`; failures as theirs."""
    return checked_scorer(
        *reward_recipe(args, stack, redis_url=redis_url, models=models, shared_limits=shared_limits)
    )


def reward_recipe(
    args: argparse.Namespace,
    stack: contextlib.ExitStack,
    *,
    redis_url: str | None,
    models: list[ModelConfig] | None = None,
    shared_limits: float | None = None,
) -> tuple[ScorerRecipe, Benchmark]:
    """The recipe of the scorer for the benchmark, judges and reward config named
    by the flags (:class:`~verifleet.reward.ScorerRecipe`: its judge-call cache is
    shared through Redis when ``redis_url`` is set, and with ``shared_limits``, the
    seconds one request may take, so are the judges' endpoint limits), with the
    benchmark loaded. A ``local`` judge runs until ``stack`` closes.

    A question whose template does not compile or is refused fails alone: its
    requests get results carrying the error (and the config's error reward); a
    scenario that failed validation is warned about in the words ``run`` and
    ``submit`` use (the server scores questions only); ``--strict`` refuses the
    benchmark for either instead.

    Raises:
        BenchmarkLoadError: the benchmark cannot be loaded, or (``--strict``) a
            template does not compile or is refused, or a scenario failed
            validation.
        ConfigError: a bad model spec.
    """
    from verifleet.reward import ScorerRecipe
    from verifleet.schemas import BenchmarkLoadError, load_benchmark

    from .._fleet.submit import template_problems

    benchmark = load_benchmark(
        args.benchmark, trust_callables=args.trust_callables, validate_templates=False
    )
    failing = template_problems(benchmark)
    if failing and args.strict:
        raise BenchmarkLoadError(
            f"--strict: {len(failing)} problem(s) that would fail alone:\n  "
            + "\n  ".join(failing),
            path=str(args.benchmark),
        )
    for problem in failing:
        print(f"warning: {problem} (its results will record the error)", file=sys.stderr)
    recipe = ScorerRecipe(
        benchmark=args.benchmark,
        trust_callables=args.trust_callables,
        judges=judge_models(args.parsing, stack) if models is None else models,
        reward_config=args.reward_config,
        redis_url=redis_url,
        shared_limits=shared_limits,
        inline_executors=_inline_executors(args),
        # Judge calls are always cached: --cache keeps them in the local file
        # across processes (with redis_url they are in the fleet's Redis either
        # way); --pricing prices them (docs/iterating.md).
        pricing=getattr(args, "pricing", None),
        local_cache=bool(getattr(args, "cache", False)),
    )
    return recipe, benchmark


def checked_scorer(recipe: ScorerRecipe, benchmark: Benchmark) -> RewardScorer:
    """The recipe's scorer, its judges' API keys checked.

    Raises:
        ConfigError: an invalid reward config or price table, a malformed Redis
            URL, or a missing API key.
        RedisAccessError: Redis is unreachable or refuses the password or TLS.
    """
    scorer = recipe.build(benchmark)
    problems = missing_credentials(scorer.config)
    if problems:
        raise ConfigError("; ".join(problems))
    return scorer


def _inline_executors(args: argparse.Namespace) -> int:
    """``--inline-executors`` (serve only): None means as many as the benchmark's."""
    count = getattr(args, "inline_executors", 0)
    if count is None:
        from verifleet.sandbox import SandboxSettings

        return SandboxSettings.from_env().pool_size
    return int(count)
