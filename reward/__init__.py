"""verifleet.reward — verification as a reward signal: the scoring core.

A response (a rollout's trajectory, or plain text) is verified against its
benchmark question by the pipeline's parse → verify → rubric stages, without
generating an answer, and the result becomes a reward in [0, 1] under the
benchmark's :class:`RewardConfig` (binary, continuous or hybrid). Judge calls go
through a cache keyed by their full input, so the same response always gets the
same reward. A response that could not be verified for an infrastructure reason
(judge unreachable, executor failure, deadline) gets no reward but a
:class:`Failure` naming the kind. Applied to rollout files by ``verifleet reward``
(locally, or on the fleet by the workers' reward task), served over HTTP by
``verifleet serve`` (``POST /verify``; its FastAPI service is the subpackage
:mod:`verifleet.reward.serve`, which nothing else here imports: importing the
scoring core, as every worker does, never imports FastAPI), and used as a TRL ``GRPOTrainer``
reward function (:func:`trl_reward` through the server, :func:`trl_reward_local`
in process).
"""

from __future__ import annotations

import typing
from typing import Any

from verifleet import _lazy

if typing.TYPE_CHECKING:
    from ._compose import RewardBreakdown, compose_reward, normalise_trait
    from ._config import (
        ComponentSource,
        RewardComponent,
        RewardConfig,
        RewardMode,
        load_reward_config,
    )
    from ._failure import FAILURE_KINDS, Failure, FailureKind
    from ._judge_cache import (
        JudgeCache,
        JudgeCachingCaller,
        MemoryJudgeCache,
        RedisJudgeCache,
        caching_caller_factory,
    )
    from ._request import (
        AgentResponse,
        InlineQuestion,
        InvalidRequestError,
        PlainVerifyRequest,
        ResponseCreateParams,
        ResponsesVerifyRequest,
        UnknownQuestionError,
        VerifyRequest,
        request_answer,
        request_kind,
    )
    from ._fleet import (
        FleetStalledError,
        RewardJobSpec,
        load_reward_job,
        reward_job_id,
        rollout_key,
        score_rollouts_fleet,
        store_reward_job,
    )
    from ._loop_gate import LoopSafeGate
    from ._rollouts import LINE_FIELD, LineError, RolloutReport, score_rollouts_local
    from ._scorer import RewardScorer, ScoredRollout, reward_resources
    from ._setup import build_scorer, reward_config_for
    from ._swap import EquivalenceVerdict, judge_equivalence
    from ._trl import TRLReward, VerifleetRewardError, trl_reward, trl_reward_local

# name -> the submodule that defines it, imported on first use: a worker loads
# the scoring core it uses, `verifleet serve --help` none of it.
_LAZY: dict[str, str] = {
    "RewardBreakdown": "._compose",
    "compose_reward": "._compose",
    "normalise_trait": "._compose",
    "ComponentSource": "._config",
    "RewardComponent": "._config",
    "RewardConfig": "._config",
    "RewardMode": "._config",
    "load_reward_config": "._config",
    "FAILURE_KINDS": "._failure",
    "Failure": "._failure",
    "FailureKind": "._failure",
    "JudgeCache": "._judge_cache",
    "JudgeCachingCaller": "._judge_cache",
    "MemoryJudgeCache": "._judge_cache",
    "RedisJudgeCache": "._judge_cache",
    "caching_caller_factory": "._judge_cache",
    "AgentResponse": "._request",
    "InlineQuestion": "._request",
    "InvalidRequestError": "._request",
    "PlainVerifyRequest": "._request",
    "ResponseCreateParams": "._request",
    "ResponsesVerifyRequest": "._request",
    "UnknownQuestionError": "._request",
    "VerifyRequest": "._request",
    "request_answer": "._request",
    "request_kind": "._request",
    "FleetStalledError": "._fleet",
    "RewardJobSpec": "._fleet",
    "load_reward_job": "._fleet",
    "reward_job_id": "._fleet",
    "rollout_key": "._fleet",
    "score_rollouts_fleet": "._fleet",
    "store_reward_job": "._fleet",
    "LoopSafeGate": "._loop_gate",
    "LINE_FIELD": "._rollouts",
    "LineError": "._rollouts",
    "RolloutReport": "._rollouts",
    "score_rollouts_local": "._rollouts",
    "RewardScorer": "._scorer",
    "ScoredRollout": "._scorer",
    "reward_resources": "._scorer",
    "build_scorer": "._setup",
    "reward_config_for": "._setup",
    "EquivalenceVerdict": "._swap",
    "judge_equivalence": "._swap",
    "TRLReward": "._trl",
    "VerifleetRewardError": "._trl",
    "trl_reward": "._trl",
    "trl_reward_local": "._trl",
}

__all__ = [
    "FAILURE_KINDS",
    "LINE_FIELD",
    "AgentResponse",
    "ComponentSource",
    "EquivalenceVerdict",
    "Failure",
    "FailureKind",
    "FleetStalledError",
    "InlineQuestion",
    "InvalidRequestError",
    "JudgeCache",
    "JudgeCachingCaller",
    "LineError",
    "LoopSafeGate",
    "MemoryJudgeCache",
    "PlainVerifyRequest",
    "RedisJudgeCache",
    "ResponseCreateParams",
    "ResponsesVerifyRequest",
    "RewardBreakdown",
    "RewardComponent",
    "RewardConfig",
    "RewardJobSpec",
    "RewardMode",
    "RewardScorer",
    "RolloutReport",
    "ScoredRollout",
    "TRLReward",
    "UnknownQuestionError",
    "VerifleetRewardError",
    "VerifyRequest",
    "build_scorer",
    "caching_caller_factory",
    "compose_reward",
    "judge_equivalence",
    "load_reward_config",
    "load_reward_job",
    "normalise_trait",
    "request_answer",
    "request_kind",
    "reward_config_for",
    "reward_job_id",
    "reward_resources",
    "rollout_key",
    "score_rollouts_fleet",
    "score_rollouts_local",
    "store_reward_job",
    "trl_reward",
    "trl_reward_local",
]


def __getattr__(name: str) -> Any:
    return _lazy.load(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return _lazy.names(__name__, _LAZY)
