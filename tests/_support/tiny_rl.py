"""A capitals benchmark rewarded without a judge, and a word-level tokenizer
built here, for the RL trainers' tests (TRL, OpenRLHF).

Each question's rubric has a regex trait ``names_capital`` matching its own
capital, and the reward config rewards that trait alone (``rubric_only``: no
judge call), so a response's reward says whether it names the capital of the
question it was verified against.
"""

from __future__ import annotations

import re
from typing import Any

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from verifleet.schemas import Benchmark, Question, RegexTrait, Rubric

#: Question id -> (country, capital).
CAPITALS = {"fr": ("france", "paris"), "it": ("italy", "rome")}

#: The tokenizer's vocabulary: special tokens first, then every word the prompts
#: and answers use, and a few decoys.
WORDS = ["<pad>", "<unk>", "<s>", "</s>", "what", "is", "the", "capital", "of", "?"]
WORDS += ["france", "italy", "paris", "rome", "lyon", "milan", "city"]

#: The reward config: the regex trait alone.
CAPITALS_REWARD: dict[str, Any] = {
    "mode": "hybrid",
    "components": [{"name": "capital", "source": "trait", "trait": "names_capital", "weight": 1}],
    "verification": {"evaluation_mode": "rubric_only"},
}

#: An answer template no test relies on (the rewards come from the rubric).
TEMPLATE = """
from pydantic import Field

from karenina.schemas.entities import BaseAnswer


class Answer(BaseAnswer):
    city: str = Field(description="The city named")

    def verify(self) -> bool:
        return False
"""


def question_text(qid: str) -> str:
    """The text of question ``qid`` (also the prompt the tests send)."""
    return f"what is the capital of {CAPITALS[qid][0]} ?"


def capitals_benchmark() -> Benchmark:
    """One question per capital; its rubric's ``names_capital`` matches that capital."""
    questions = [
        Question(
            id=qid,
            text=question_text(qid),
            answer_template=TEMPLATE,
            question_rubric=Rubric(
                regex_traits=[RegexTrait(name="names_capital", pattern=rf"\b{city}\b")]
            ),
        )
        for qid, (_, city) in CAPITALS.items()
    ]
    return Benchmark(name="capitals", questions=questions)


def names_capital(qid: str, text: str) -> float:
    """The reward the benchmark should give ``text`` as an answer to ``qid``."""
    return 1.0 if re.search(rf"\b{CAPITALS[qid][1]}\b", text) else 0.0


def word_tokenizer() -> PreTrainedTokenizerFast:
    """A word-level tokenizer over :data:`WORDS` (no download); decoding joins
    words with spaces."""
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
