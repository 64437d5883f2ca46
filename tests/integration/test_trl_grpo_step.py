"""A real TRL ``GRPOTrainer`` training step whose rewards come from ``verifleet
serve`` (the CLI, started here on a free loopback port).

The policy is a tiny Llama built from a config (no download) with a word-level
tokenizer built here; it samples words at random, so some completions name
the question's capital and some do not. The benchmark rewards naming it with a
regex trait (``rubric_only``: no judge call), one pattern per question, so the
reward also shows that each completion was verified against its own question
(the dataset's ``question_id`` column). A third question's trait is an LLM
trait whose judge is a port nothing listens on: its completions cannot be
verified, and TRL must leave them out (reward None, advantage 0).
"""

from __future__ import annotations

import math
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch
import yaml
from _support.fleet import VERIFLEET
from _support.redis_server import free_port
from _support.tiny_rl import (
    CAPITALS,
    CAPITALS_REWARD,
    TEMPLATE,
    WORDS,
    capitals_benchmark,
    names_capital,
    question_text,
    word_tokenizer,
)
from datasets import Dataset
from transformers import LlamaConfig, LlamaForCausalLM
from trl import GRPOConfig, GRPOTrainer

from verifleet.reward import trl_reward
from verifleet.schemas import Benchmark, LLMRubricTrait, Question, Rubric, dump_benchmark

#: The question whose trait needs the judge (unreachable).
UNJUDGED = "de"
ONE_TRY = {"retry_policy": {"max_attempts": 1}}


def _benchmark() -> Benchmark:
    benchmark = capitals_benchmark()
    trait = LLMRubricTrait(name="names_capital", kind="boolean")
    question = Question(
        id=UNJUDGED,
        text="what is the capital of germany ?",
        answer_template=TEMPLATE,
        question_rubric=Rubric(llm_traits=[trait]),
    )
    benchmark.questions.append(question)
    return benchmark


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``verifleet serve`` for the capitals benchmark; its base URL."""
    folder = tmp_path_factory.mktemp("grpo")
    bench, reward = folder / "capitals.yaml", folder / "reward.yaml"
    dump_benchmark(_benchmark(), bench)
    config = {**CAPITALS_REWARD, "verification": {**CAPITALS_REWARD["verification"], **ONE_TRY}}
    reward.write_text(yaml.safe_dump(config))
    port = free_port()
    log_path = folder / "serve.log"
    # Regex traits make no judge call; the judge named here is a port nothing
    # listens on, so the LLM trait of UNJUDGED fails as a judge outage does.
    judge = f"http://127.0.0.1:{free_port()}/v1#judge"
    command = [*VERIFLEET, "serve", str(bench), "--reward-config", str(reward)]
    command += ["--parsing", judge, "--host", "127.0.0.1", "--port", str(port)]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300  # imports take minutes on a loaded machine
        while True:
            assert proc.poll() is None, log_path.read_text()
            try:
                if httpx.get(f"{url}/health", trust_env=False).status_code == 200:
                    break
            except httpx.ConnectError:
                assert time.monotonic() < deadline, "verifleet serve did not start"
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _policy() -> Any:
    config = LlamaConfig(
        vocab_size=len(WORDS),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        bos_token_id=2,
        eos_token_id=3,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config)


def _verifleet_rewards(url: str, qids: list[str], completions: list[str]) -> list[float | None]:
    """What verifleet computes for these completions, asked directly (plain form)."""
    rollouts = [{"question_id": q, "response": c} for q, c in zip(qids, completions, strict=True)]
    reply = httpx.post(
        f"{url}/verify/batch", json={"rollouts": rollouts}, trust_env=False, timeout=120
    )
    assert reply.status_code == 200, reply.text
    return [entry["reward"] for entry in reply.json()["results"]]


def _same(logged: list[float], rewards: list[float | None]) -> bool:
    """Whether TRL's logged rewards are these (None logged as NaN)."""
    return len(logged) == len(rewards) and all(
        math.isnan(x) if r is None else x == r for x, r in zip(logged, rewards, strict=True)
    )


def test_a_grpo_step_trains_on_verifleet_rewards(server: str, tmp_path: Path) -> None:
    prompts = {question_text(qid): qid for qid in CAPITALS}
    prompts["what is the capital of germany ?"] = UNJUDGED
    dataset = Dataset.from_dict({"prompt": list(prompts), "question_id": list(prompts.values())})
    model = _policy()
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=12,  # the three prompts, 4 completions each
        num_generations=4,
        max_completion_length=8,
        max_steps=1,
        learning_rate=1e-2,
        use_cpu=True,
        report_to="none",
        logging_steps=1,
        save_strategy="no",
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=trl_reward(server, trust_env=False),
        args=args,
        train_dataset=dataset,
        processing_class=word_tokenizer(),
    )
    trainer.train()

    completions = list(trainer._logs["completion"])
    logged = list(trainer._logs["rewards"]["verifleet"])
    advantages = list(trainer._logs["advantages"])
    qids = [prompts[p] for p in trainer._logs["prompt"]]
    assert len(completions) == len(logged) == 12
    assert sorted(set(qids)) == ["de", "fr", "it"]
    # The rewards TRL logged are verifleet's for those completions...
    assert _same(logged, _verifleet_rewards(server, qids, completions)), logged
    # ...and mean what the benchmark says: the question's own capital named;
    # the unverifiable ones are NaN (None), with no advantage.
    expected = [
        None if q == UNJUDGED else names_capital(q, c)
        for q, c in zip(qids, completions, strict=True)
    ]
    assert _same(logged, expected), (logged, completions)
    judged = [x for x, q in zip(logged, qids, strict=True) if q != UNJUDGED]
    assert [a for a, q in zip(advantages, qids, strict=True) if q == UNJUDGED] == [0.0] * 4
    # Both verdicts occur (a group whose rewards are all equal has no advantage,
    # and the step would leave the policy as it was).
    assert set(judged) == {0.0, 1.0}, completions
    metrics = trainer.state.log_history[0]
    # TRL computes its metrics in float32.
    assert math.isclose(metrics["rewards/verifleet/mean"], sum(judged) / len(judged), rel_tol=1e-6)
    assert math.isclose(metrics["verifleet/unverified"], 4 / 12, rel_tol=1e-6)
    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert changed, "the step did not update any parameter"
