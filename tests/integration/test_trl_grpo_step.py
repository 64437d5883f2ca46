"""A real TRL ``GRPOTrainer`` training step whose rewards come from ``verifleet
serve`` (the CLI, started here on a free loopback port).

The policy is a tiny Llama built from a config (no download) with a word-level
tokenizer trained here; it samples words at random, so some completions name
the question's capital and some do not. The benchmark rewards naming it with a
regex trait (``rubric_only``: no judge call), one pattern per question, so the
reward also shows that each completion was verified against its own question
(the dataset's ``question_id`` column).
"""

from __future__ import annotations

import math
import re
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
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import GRPOConfig, GRPOTrainer

from verifleet.reward import trl_reward
from verifleet.schemas import Benchmark, Question, RegexTrait, Rubric, dump_benchmark

CAPITALS = {"fr": ("france", "paris"), "it": ("italy", "rome")}
WORDS = ["<pad>", "<unk>", "<s>", "</s>", "what", "is", "the", "capital", "of", "?"]
WORDS += ["france", "italy", "paris", "rome", "lyon", "milan", "city"]

TEMPLATE = """
from pydantic import Field

from karenina.schemas.entities import BaseAnswer


class Answer(BaseAnswer):
    city: str = Field(description="The city named")

    def verify(self) -> bool:
        return False
"""


def _benchmark() -> Benchmark:
    questions = [
        Question(
            id=qid,
            text=f"what is the capital of {country} ?",
            answer_template=TEMPLATE,
            question_rubric=Rubric(
                regex_traits=[RegexTrait(name="names_capital", pattern=rf"\b{city}\b")]
            ),
        )
        for qid, (country, city) in CAPITALS.items()
    ]
    return Benchmark(name="capitals", questions=questions)


REWARD = {
    "mode": "hybrid",
    "components": [{"name": "capital", "source": "trait", "trait": "names_capital", "weight": 1}],
    "verification": {"evaluation_mode": "rubric_only"},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``verifleet serve`` for the capitals benchmark; its base URL."""
    folder = tmp_path_factory.mktemp("grpo")
    bench, reward = folder / "capitals.yaml", folder / "reward.yaml"
    dump_benchmark(_benchmark(), bench)
    reward.write_text(yaml.safe_dump(REWARD))
    port = free_port()
    log_path = folder / "serve.log"
    # rubric_only with regex traits makes no judge call: the judge named here
    # (a port nothing listens on) only keeps serve from starting its bundled one.
    judge = f"http://127.0.0.1:{free_port()}/v1#judge"
    command = [*VERIFLEET, "serve", str(bench), "--reward-config", str(reward)]
    command += ["--parsing", judge, "--host", "127.0.0.1", "--port", str(port)]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
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


def _tokenizer() -> PreTrainedTokenizerFast:
    vocab = {word: index for index, word in enumerate(WORDS)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
    )


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


def _verifleet_rewards(url: str, qids: list[str], completions: list[str]) -> list[float]:
    """What verifleet computes for these completions, asked directly (plain form)."""
    rollouts = [{"question_id": q, "response": c} for q, c in zip(qids, completions, strict=True)]
    reply = httpx.post(
        f"{url}/verify/batch", json={"rollouts": rollouts}, trust_env=False, timeout=120
    )
    assert reply.status_code == 200, reply.text
    return [entry["reward"] for entry in reply.json()["results"]]


def test_a_grpo_step_trains_on_verifleet_rewards(server: str, tmp_path: Path) -> None:
    prompts = {f"what is the capital of {country} ?": qid for qid, (country, _) in CAPITALS.items()}
    dataset = Dataset.from_dict({"prompt": list(prompts), "question_id": list(prompts.values())})
    model = _policy()
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=8,  # both prompts, 4 completions each
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
        processing_class=_tokenizer(),
    )
    trainer.train()

    completions = list(trainer._logs["completion"])
    logged = list(trainer._logs["rewards"]["verifleet"])
    qids = [prompts[p] for p in trainer._logs["prompt"]]
    assert len(completions) == len(logged) == 8
    assert sorted(set(qids)) == ["fr", "it"]
    # The rewards TRL logged are verifleet's for those completions...
    assert logged == _verifleet_rewards(server, qids, completions)
    # ...and mean what the benchmark says: the question's own capital named.
    expected = [
        1.0 if re.search(rf"\b{CAPITALS[q][1]}\b", c) else 0.0
        for q, c in zip(qids, completions, strict=True)
    ]
    assert logged == expected
    # Both verdicts occur (a group whose rewards are all equal has no advantage,
    # and the step would leave the policy as it was).
    assert set(logged) == {0.0, 1.0}, completions
    metrics = trainer.state.log_history[0]
    assert math.isclose(metrics["rewards/verifleet/mean"], sum(logged) / len(logged))
    assert metrics["verifleet/unverified"] == 0.0
    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert changed, "the step did not update any parameter"
