"""verifleet's TRL reward function against a real reward service (uvicorn on a
free loopback port, the bench endpoint as the judge), called as TRL's
``GRPOTrainer`` calls it. The training step itself: test_trl_grpo_step.py."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from _support.asgi_thread import ServedApp, serve_in_thread
from _support.redis_server import free_port
from _support.reward import CORRECT, JUDGE_ANSWERS, PARTIAL, QUESTION, WRONG, geo_benchmark

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.reward import (
    RewardConfig,
    RewardScorer,
    VerifleetRewardError,
    reward_resources,
    trl_reward,
    trl_reward_local,
)
from verifleet.reward.serve import create_app
from verifleet.schemas import ModelConfig

CONTINUOUS = RewardConfig(mode="continuous")
TOKEN = "trl-t0ken"


@pytest.fixture(scope="module")
def judge() -> Iterator[RunningEndpoint]:
    with run_endpoint_in_thread(EndpointConfig(answers=JUDGE_ANSWERS)) as endpoint:
        yield endpoint


def _app(judge_url: str, reward: RewardConfig, **options: Any) -> Any:
    return create_app(
        geo_benchmark(),
        [ModelConfig.parse(f"{judge_url}#judge")],
        reward,
        resources=reward_resources(),
        **options,
    )


@pytest.fixture(scope="module")
def served(judge: RunningEndpoint) -> Iterator[ServedApp]:
    with serve_in_thread(_app(judge.base_url, CONTINUOUS, token=TOKEN)) as app:
        yield app


@pytest.fixture(scope="module")
def judge_down() -> Iterator[ServedApp]:
    """A service whose judge is a port nothing listens on: every judged request
    fails for an infrastructure reason (one attempt, no retry)."""
    reward = RewardConfig.build(
        {"mode": "continuous", "verification": {"retry_policy": {"max_attempts": 1}}}
    )
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with serve_in_thread(_app(dead, reward)) as app:
        yield app


class Logged:
    """TRL's ``log_metric`` and ``log_extra`` callbacks, recording their calls."""

    def __init__(self) -> None:
        self.metrics: dict[str, float] = {}
        self.extra: dict[str, list[Any]] = {}

    def kwargs(self) -> dict[str, Any]:
        return {"log_metric": self.metrics.__setitem__, "log_extra": self.extra.__setitem__}


def test_standard_and_conversational_completions_get_the_servers_rewards(
    served: ServedApp,
) -> None:
    reward = trl_reward(served.url, token=TOKEN, trust_env=False)
    logged = Logged()
    # The standard format, the question named by the dataset's question_id column
    # (the prompt's text is not the question's: a template wraps it).
    rewards = reward(
        prompts=[f"Q: {QUESTION}\nA:"] * 3,
        completions=[CORRECT, PARTIAL, WRONG],
        completion_ids=[[1], [2], [3]],
        question_id=["geo"] * 3,
        trainer_state=None,
        **logged.kwargs(),
    )
    assert rewards == [1.0, 0.5, 0.0]
    assert logged.metrics == {"verifleet/unverified": 0.0}
    assert logged.extra == {"verifleet_failure": [None, None, None]}
    # The conversational format, no question_id column: the question is found by
    # the prompt's last user message.
    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}]
    chats = [[{"role": "assistant", "content": text}] for text in (WRONG, CORRECT)]
    assert reward(prompts=[prompt, prompt], completions=chats) == [0.0, 1.0]
    # The same rewards as /verify answers for the same responses.
    for text, expected in ((CORRECT, 1.0), (PARTIAL, 0.5)):
        one = httpx.post(
            f"{served.url}/verify",
            json={"question_id": "geo", "response": text},
            headers={"authorization": f"Bearer {TOKEN}"},
            trust_env=False,
            timeout=60,
        )
        assert one.json()["reward"] == expected


def test_a_tool_using_completion_is_verified_as_a_trace(served: ServedApp) -> None:
    reward = trl_reward(served.url, token=TOKEN, trust_env=False)
    completion = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "search", "arguments": {}}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Paris is the capital of France."},
        {"role": "assistant", "content": PARTIAL},
    ]
    # Templates read the final assistant message: PARTIAL, not the tool's reply.
    assert reward(prompts=[[{"role": "user", "content": QUESTION}]], completions=[completion]) == [
        0.5
    ]


def test_judge_failures_are_none_and_logged(judge_down: ServedApp) -> None:
    reward = trl_reward(judge_down.url, trust_env=False)
    logged = Logged()
    rewards = reward(prompts=[QUESTION, QUESTION], completions=[CORRECT, WRONG], **logged.kwargs())
    # None, which TRL turns into NaN and leaves out of the advantages; never 0.0.
    assert rewards == [None, None]
    assert logged.metrics == {"verifleet/unverified": 1.0}
    assert logged.extra == {"verifleet_failure": ["judge_unreachable", "judge_unreachable"]}


def test_empty_completions_get_the_empty_reward_without_a_request(
    judge_down: ServedApp,
) -> None:
    # Sent to the judge-down service, a completion with text would come back None:
    # a number for the empty ones proves they were never sent.
    reward = trl_reward(judge_down.url, empty_reward=-1.0, trust_env=False)
    chats = [[{"role": "assistant", "content": "   "}], [{"role": "assistant", "content": ""}]]
    assert reward(prompts=[QUESTION, QUESTION], completions=chats) == [-1.0, -1.0]
    assert reward(prompts=[QUESTION, QUESTION], completions=["", CORRECT]) == [-1.0, None]


def test_set_up_mistakes_raise_with_the_servers_message(served: ServedApp) -> None:
    with pytest.raises(VerifleetRewardError, match=r"completion 1: .*404.*unknown question id 'x'"):
        trl_reward(served.url, token=TOKEN, trust_env=False)(
            prompts=["a", "b"], completions=[CORRECT, CORRECT], question_id=["geo", "x"]
        )
    with pytest.raises(VerifleetRewardError, match="401"):
        trl_reward(served.url, token="wrong", trust_env=False)(
            prompts=[QUESTION], completions=[CORRECT]
        )
    with pytest.raises(ValueError, match="2 completions for 1 prompts"):
        trl_reward(served.url, token=TOKEN)(prompts=[QUESTION], completions=[CORRECT, WRONG])


def test_an_unreachable_server_raises_after_the_timeout() -> None:
    reward = trl_reward(f"http://127.0.0.1:{free_port()}", timeout=1.5, trust_env=False)
    with pytest.raises(VerifleetRewardError, match=r"no rewards within 1\.5s.*ConnectError"):
        reward(prompts=[QUESTION], completions=[CORRECT])


def test_batches_larger_than_the_servers_limit_are_split(judge: RunningEndpoint) -> None:
    with serve_in_thread(_app(judge.base_url, CONTINUOUS, max_batch=2)) as app:
        texts = [CORRECT, PARTIAL, WRONG, CORRECT, WRONG]
        too_big = trl_reward(app.url, batch_size=5, trust_env=False)
        with pytest.raises(VerifleetRewardError, match="413"):
            too_big(prompts=[QUESTION] * 5, completions=texts)
        split = trl_reward(app.url, batch_size=2, trust_env=False)
        assert split(prompts=[QUESTION] * 5, completions=texts) == [1.0, 0.5, 0.0, 1.0, 0.0]


def test_in_process_variant_gives_the_same_rewards(
    judge: RunningEndpoint, served: ServedApp
) -> None:
    scorer = RewardScorer(
        geo_benchmark(), [ModelConfig.parse(f"{judge.base_url}#judge")], CONTINUOUS
    )
    local = trl_reward_local(scorer, name="geo_local")
    remote = trl_reward(served.url, token=TOKEN, trust_env=False)
    args = {"prompts": [QUESTION] * 3, "completions": [WRONG, CORRECT, PARTIAL]}
    assert local(**args) == remote(**args) == [0.0, 1.0, 0.5]
    assert local.__name__ == "geo_local"
    with pytest.raises(VerifleetRewardError, match="404"):
        local(prompts=["x"], completions=[CORRECT], question_id=["nope"])


def test_the_http_reward_function_pickles_after_use(served: ServedApp) -> None:
    reward = trl_reward(served.url, token=TOKEN, trust_env=False)
    assert reward(prompts=[QUESTION], completions=[CORRECT]) == [1.0]
    copy = pickle.loads(pickle.dumps(reward))
    assert copy.__name__ == "verifleet"
    assert copy(prompts=[QUESTION], completions=[WRONG]) == [0.0]
