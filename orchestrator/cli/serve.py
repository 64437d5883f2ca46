"""``verifleet serve``: the reward service (``POST /verify``) for one benchmark.

Reinforcement-learning rollout collectors send each finished rollout to
``POST /verify`` and get back the rollout with its ``reward`` (0.0-1.0) and the
full verification result. The response is verified as given: no answer is
generated. ``--reward-config`` chooses binary, continuous or hybrid rewards (see
docs/reward.md); ``--redis`` shares the judge-call cache between service
replicas so every replica gives a response the same reward.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any

import redis

from verifleet.reward import (
    MemoryJudgeCache,
    RedisJudgeCache,
    RewardConfig,
    RewardScorer,
    load_reward_config,
    reward_resources,
)
from verifleet.schemas import BenchmarkLoadError, ConfigError, ModelConfig, load_benchmark

from .._fleet.submit import template_problems
from ..serve import DEFAULT_MAX_BODY_BYTES, create_app
from ._sandbox import add_sandbox_argument, start_sandbox
from .config import LOCAL, missing_credentials

__all__ = ["add_reward_arguments", "judge_models", "register", "reward_setup"]

_EPILOG = """\
examples:
  verifleet serve bench.yaml                      # the bundled local judge
  verifleet serve bench.yaml --parsing openai:gpt-4.1-mini --port 8080
  verifleet serve bench.yaml --parsing http://127.0.0.1:8000/v1#judge \\
      --reward-config reward.yaml --redis redis://127.0.0.1:6379/0

  curl -s localhost:8080/verify -H 'content-type: application/json' \\
      -d '{"question_id": "q1", "response": "The capital is Paris."}'
"""


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


def judge_models(specs: list[str], stack: contextlib.ExitStack) -> list[ModelConfig]:
    """Judge models from command-line specs, at temperature 0. ``local`` starts the
    bundled model, which stays up until ``stack`` closes.

    Raises:
        ConfigError: a spec has none of the accepted forms.
        LocalLLMError: the local model cannot be started.
    """
    local_spec: str | None = None
    models = []
    for spec in specs:
        if spec == LOCAL:
            if local_spec is None:
                from verifleet.orchestrator import LocalLLMServer

                print("starting the local model (llama-server + SmolLM2) ...", file=sys.stderr)
                local_spec = stack.enter_context(LocalLLMServer()).spec
            # A tiny model needs room for structured JSON replies.
            models.append(ModelConfig.parse(local_spec, temperature=0.0, max_tokens=512))
        else:
            models.append(ModelConfig.parse(spec, temperature=0.0))
    return models


def _reward_config(path: Path | None, metadata: dict[str, Any]) -> RewardConfig:
    """The file's config, else the benchmark's own (``custom_metadata.reward``),
    else binary rewards."""
    if path is not None:
        return load_reward_config(path)
    if "reward" in metadata:
        return RewardConfig.build(metadata["reward"])
    return RewardConfig()


def reward_setup(
    args: argparse.Namespace, stack: contextlib.ExitStack, *, redis_url: str | None
) -> RewardScorer:
    """The scorer for the benchmark, judges and reward config named by the flags;
    its judge-call cache is shared through Redis when ``redis_url`` is set. A
    ``local`` judge runs until ``stack`` closes.

    A question whose template does not compile or is refused fails alone: its
    requests get results carrying the error (and the config's error reward);
    ``--strict`` refuses the benchmark instead.

    Raises:
        BenchmarkLoadError: the benchmark cannot be loaded, or (``--strict``) a
            template does not compile or is refused.
        ConfigError: a bad model spec or reward config, or a missing API key.
    """
    benchmark = load_benchmark(
        args.benchmark, trust_callables=args.trust_callables, validate_templates=False
    )
    failing = template_problems(benchmark)
    if failing and args.strict:
        raise BenchmarkLoadError(
            f"{len(failing)} template problem(s):\n  " + "\n  ".join(failing),
            path=str(args.benchmark),
        )
    for problem in failing:
        print(f"warning: {problem} (its results will record the error)", file=sys.stderr)
    models = judge_models(args.parsing, stack)
    reward = _reward_config(args.reward_config, benchmark.custom_metadata)
    if redis_url:
        cache: Any = RedisJudgeCache(redis.Redis.from_url(redis_url))
    else:
        cache = MemoryJudgeCache()
    resources = reward_resources(cache)
    scorer = RewardScorer(benchmark, models, reward, resources=resources)
    problems = missing_credentials(scorer.config)
    if problems:
        raise ConfigError("; ".join(problems))
    return scorer


def register(commands: Any) -> None:
    """Add the ``serve`` sub-command."""
    parser = commands.add_parser(
        "serve",
        help="serve POST /verify: rewards for RL rollouts",
        description=__doc__,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("benchmark", type=Path, help="benchmark file (.yaml, .json or .jsonld)")
    add_reward_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    parser.add_argument("--redis", metavar="URL", help="share the judge-call cache through Redis")
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        help=f"larger requests get 413 (default {DEFAULT_MAX_BODY_BYTES})",
    )
    parser.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    start_sandbox(args)
    with contextlib.ExitStack() as stack:
        scorer = reward_setup(args, stack, redis_url=args.redis)
        benchmark, reward = scorer.benchmark, scorer.reward_config
        app = create_app(
            benchmark,
            scorer.parsing_models,
            reward,
            resources=scorer.resources,
            max_body_bytes=args.max_body_bytes,
        )
        print(
            f"verifleet serve: {benchmark.name} ({len(benchmark.questions)} questions, "
            f"{reward.mode} reward) on http://{args.host}:{args.port}/verify",
            flush=True,
        )
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)
    return 0
