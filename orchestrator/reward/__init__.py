"""verifleet.orchestrator.reward — verification as a reward signal.

A response (a rollout's trajectory, or plain text) is verified against its
benchmark question by the pipeline's parse → verify → rubric stages, without
generating an answer, and the result becomes a reward in [0, 1] under the
benchmark's :class:`RewardConfig` (binary, continuous or hybrid). Judge calls go
through a cache keyed by their full input, so the same response always gets the
same reward. Served over HTTP by ``verifleet serve`` (``POST /verify``) and
applied to rollout files by ``verifleet reward``.
"""

from ._compose import RewardBreakdown, compose_reward, normalise_trait
from ._config import (
    ComponentSource,
    RewardComponent,
    RewardConfig,
    RewardMode,
    load_reward_config,
)
from ._judge_cache import (
    CachingCaller,
    JudgeCache,
    MemoryJudgeCache,
    RedisJudgeCache,
    caching_caller_factory,
    judge_call_key,
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
from ._service import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_REQUEST_TIMEOUT,
    HEALTH_PATH,
    HealthResponse,
    VerifyResponse,
    create_app,
)
from ._fleet import (
    REWARD_TASK_NAME,
    FleetStalledError,
    RewardJobKeys,
    RewardJobSpec,
    load_reward_job,
    reward_job_id,
    rollout_key,
    score_rollouts_fleet,
    store_reward_job,
)
from ._rollouts import LINE_FIELD, LineError, RolloutReport, score_rollouts_local
from ._scorer import RewardScorer, ScoredRollout, reward_resources
from ._swap import EquivalenceVerdict, judge_equivalence

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_REQUEST_TIMEOUT",
    "HEALTH_PATH",
    "LINE_FIELD",
    "REWARD_TASK_NAME",
    "AgentResponse",
    "CachingCaller",
    "ComponentSource",
    "EquivalenceVerdict",
    "FleetStalledError",
    "HealthResponse",
    "InlineQuestion",
    "InvalidRequestError",
    "JudgeCache",
    "LineError",
    "MemoryJudgeCache",
    "PlainVerifyRequest",
    "RedisJudgeCache",
    "ResponseCreateParams",
    "ResponsesVerifyRequest",
    "RewardBreakdown",
    "RewardComponent",
    "RewardConfig",
    "RewardJobKeys",
    "RewardJobSpec",
    "RewardMode",
    "RewardScorer",
    "RolloutReport",
    "ScoredRollout",
    "UnknownQuestionError",
    "VerifyRequest",
    "VerifyResponse",
    "caching_caller_factory",
    "compose_reward",
    "create_app",
    "judge_call_key",
    "judge_equivalence",
    "load_reward_config",
    "load_reward_job",
    "normalise_trait",
    "request_answer",
    "request_kind",
    "reward_job_id",
    "reward_resources",
    "rollout_key",
    "score_rollouts_fleet",
    "score_rollouts_local",
    "store_reward_job",
]
