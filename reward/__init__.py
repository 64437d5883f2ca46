"""verifleet.reward — verification as a reward signal: the scoring core.

A response (a rollout's trajectory, or plain text) is verified against its
benchmark question by the pipeline's parse → verify → rubric stages, without
generating an answer, and the result becomes a reward in [0, 1] under the
benchmark's :class:`RewardConfig` (binary, continuous or hybrid). Judge calls go
through the model-call cache (``verifleet.pipeline.CachingCaller``, the first
reply kept), so the same response always gets the same reward. A response that could not be verified for an infrastructure reason
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
    from ._setup import ScorerRecipe, build_scorer, reward_config_for
    from ._swap import EquivalenceVerdict, judge_equivalence
    from ._trl import TRLReward, VerifleetRewardError, trl_reward, trl_reward_local

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
    "LineError",
    "LoopSafeGate",
    "PlainVerifyRequest",
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
    "ScorerRecipe",
    "TRLReward",
    "UnknownQuestionError",
    "VerifleetRewardError",
    "VerifyRequest",
    "build_scorer",
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


# Each name of __all__ loads on first use, from the module the TYPE_CHECKING block
# imports it from: a worker loads the scoring core, `verifleet serve --help` none of
# it.
__getattr__, __dir__ = _lazy.exports(__name__)
