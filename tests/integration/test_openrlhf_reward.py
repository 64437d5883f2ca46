"""OpenRLHF's remote reward protocol (``--remote_rm_url``) on ``verifleet serve``'s
``POST /get_reward``, driven by OpenRLHF's own client.

The client is OpenRLHF 0.11.2's ``openrlhf/utils/agent.py`` from its wheel on
PyPI (downloaded here, never installed: the package pins GPU-only dependencies,
deepspeed and flash-attn). That module needs only aiohttp and its own
``logging_utils``, so both are loaded from their files, the way OpenRLHF's own
tests load it, and its ``SingleTurnAgentExecutor`` sends the requests.
"""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import httpx
import pytest
from _support.asgi_thread import ServedApp, serve_in_thread
from _support.redis_server import free_port
from _support.reward import CORRECT, QUESTION, geo_benchmark
from _support.tiny_rl import CAPITALS_REWARD, capitals_benchmark, question_text, word_tokenizer

from verifleet.reward import RewardConfig, reward_resources
from verifleet.reward.serve import create_app
from verifleet.schemas import Benchmark, ModelConfig

OPENRLHF = "openrlhf==0.11.2"


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """OpenRLHF's ``openrlhf.utils.agent``, loaded from the wheel's source."""
    folder = tmp_path_factory.mktemp("openrlhf")
    # The cp311 manylinux wheel whatever this machine is: only its Python
    # sources are read.
    wheel_tags = ["--python-version", "3.11", "--platform", "manylinux1_x86_64"]
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q"]
    subprocess.run([*pip, *wheel_tags, "-d", str(folder), OPENRLHF], check=True)
    (wheel,) = folder.glob("openrlhf-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder / "src")
    (root,) = (folder / "src").glob("openrlhf-*.data/purelib/openrlhf")
    loaded: list[str] = []

    def load(name: str, path: Path) -> ModuleType:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        loaded.append(name)
        spec.loader.exec_module(module)
        return module

    try:
        load("openrlhf.utils.logging_utils", root / "utils" / "logging_utils.py")
        yield load("_openrlhf_agent", root / "utils" / "agent.py")
    finally:
        for name in loaded:
            sys.modules.pop(name, None)


def _serve(benchmark: Benchmark, reward: RewardConfig, judge: str) -> ServedApp:
    models = [ModelConfig.parse(f"{judge}#judge")]
    return serve_in_thread(create_app(benchmark, models, reward, resources=reward_resources()))


@pytest.fixture(scope="module")
def capitals() -> Iterator[ServedApp]:
    # rubric_only regex traits: no judge call is made (the judge is a closed port).
    judge = f"http://127.0.0.1:{free_port()}/v1"
    with _serve(capitals_benchmark(), RewardConfig.build(CAPITALS_REWARD), judge) as app:
        yield app


@pytest.fixture(scope="module")
def judge_down() -> Iterator[ServedApp]:
    """The geo benchmark, judged by a port nothing listens on (one attempt)."""
    reward = RewardConfig.build({"verification": {"retry_policy": {"max_attempts": 1}}})
    with _serve(geo_benchmark(), reward, f"http://127.0.0.1:{free_port()}/v1") as app:
        yield app


class ScriptedEngine:
    """Stands in for OpenRLHF's vLLM engine (GPU only): answers every prompt
    with the same scripted words, as a policy would sample them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.token_ids = word_tokenizer()(text, add_special_tokens=False)["input_ids"]

    async def generate(
        self, token_ids: list[int], params: Any, multi_modal_data: Any = None
    ) -> Any:
        output = SimpleNamespace(
            token_ids=self.token_ids, text=self.text, finish_reason="stop", logprobs=None
        )
        return SimpleNamespace(outputs=[output])


def _rollout(agent: ModuleType, url: str, prompt: str, label: Any, answer: str) -> dict[str, Any]:
    """One rollout through OpenRLHF's single-turn executor and its reward call."""
    executor = agent.SingleTurnAgentExecutor(f"{url}/get_reward")
    params = SimpleNamespace(max_tokens=8, logprobs=None)
    engine = ScriptedEngine(answer)
    run = executor.execute(prompt, label, params, 64, word_tokenizer(), engine)
    result: dict[str, Any] = asyncio.run(run)
    return result


def test_openrlhfs_executor_gets_verifleet_rewards(agent: ModuleType, capitals: ServedApp) -> None:
    prompt = question_text("fr")
    # The query OpenRLHF builds is the decoded prompt and answer, special tokens kept.
    right = _rollout(agent, capitals.url, prompt, "fr", "paris </s>")
    assert right["reward"] == right["scores"] == [1.0]
    assert right["extra_logs"] == {"verifleet_capital": [1.0]}
    wrong = _rollout(agent, capitals.url, prompt, "fr", "lyon city </s>")
    assert wrong["reward"] == [0.0]
    # Without a label the question is the one whose text is the prompt.
    assert _rollout(agent, capitals.url, question_text("it"), None, "rome")["reward"] == [1.0]
    # The label decides: "paris" answers the wrong question here.
    assert _rollout(agent, capitals.url, prompt, "it", "paris")["reward"] == [0.0]


def test_a_batch_of_queries_gets_one_reward_each_in_order(
    agent: ModuleType, capitals: ServedApp
) -> None:
    executor = agent.SingleTurnAgentExecutor(f"{capitals.url}/get_reward")
    prompts = [question_text(q) for q in ("fr", "it", "fr", "it")]
    answers = ["paris", "paris", "milan", "rome <|im_end|>"]
    queries = [f"<s>{p} {a}" for p, a in zip(prompts, answers, strict=True)]
    labels = [{"question_id": "fr"}, "it", "fr", "it"]
    (reply,) = asyncio.run(executor._fetch_rewards_via_http(queries, prompts, labels))
    assert reply["rewards"] == reply["scores"] == [1.0, 0.0, 0.0, 1.0]
    assert reply["extra_logs"] == {"verifleet_capital": [1.0, 0.0, 0.0, 1.0]}


def test_an_empty_response_gets_the_error_reward_without_a_judge_call(
    agent: ModuleType, judge_down: ServedApp
) -> None:
    executor = agent.SingleTurnAgentExecutor(f"{judge_down.url}/get_reward")
    # Sent to the judge-down service, it would fail: a number proves it was not.
    (reply,) = asyncio.run(
        executor._fetch_rewards_via_http([f"{QUESTION} </s>"], [QUESTION], ["geo"])
    )
    assert reply["rewards"] == [0.0]


def test_a_judge_failure_is_an_error_status_never_a_reward(
    agent: ModuleType, judge_down: ServedApp
) -> None:
    body = {"query": [f"{QUESTION} {CORRECT}"], "prompts": [QUESTION], "labels": ["geo"]}
    reply = httpx.post(f"{judge_down.url}/get_reward", json=body, trust_env=False, timeout=60)
    assert reply.status_code == 502, reply.text
    assert reply.json()["failure"]["kind"] == "judge_unreachable"
    # OpenRLHF's executor retries (5 tries, 1 s apart), then leaves the rollout
    # without a reward instead of training on a made-up one.
    rollout = _rollout(agent, judge_down.url, QUESTION, "geo", "paris")
    assert rollout["reward"] is None and rollout["scores"] is None


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"{not json", 400, "not valid JSON"),
        ({"queries": ["x"]}, 422, 'is {"query"'),
        ({"query": ["a b"], "labels": ["fr", "it"]}, 422, "one entry per query (1)"),
        ({"query": ["what paris"], "prompts": ["other prompt"]}, 422, "query 0: its prompt"),
        ({"query": ["paris"]}, 422, "query 0: no question"),
        ({"query": ["paris"], "labels": ["atlantis"]}, 404, "query 0: unknown question id"),
    ],
)
def test_bad_requests_get_a_status_and_a_message(
    capitals: ServedApp, body: Any, status: int, message: str
) -> None:
    url = f"{capitals.url}/get_reward"
    if isinstance(body, bytes):
        reply = httpx.post(url, content=body, trust_env=False, timeout=60)
    else:
        reply = httpx.post(url, json=body, trust_env=False, timeout=60)
    assert reply.status_code == status, reply.text
    assert message in reply.json()["message"]
