"""A small benchmark and judge answers for reward tests.

The judge is the bench endpoint (a real HTTP server with deterministic replies):
its answers map is keyed by the *response* texts, so the parsing call of each
response (whose prompt contains it) gets the field values that response states.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from _support.asgi_thread import serve_in_thread
from verifleet.reward import RewardConfig, reward_resources
from verifleet.reward.serve import create_app
from verifleet.schemas import Benchmark, LLMRubricTrait, ModelConfig, Question, RegexTrait, Rubric

GEO_TEMPLATE = textwrap.dedent(
    """
    from pydantic import Field

    from karenina.schemas.entities import BaseAnswer


    class Answer(BaseAnswer):
        city: str = Field(description="The capital city the response names")
        country: str = Field(description="The country the response names")

        def model_post_init(self, __context):
            self.correct = {"city": "Paris", "country": "France"}

        def _hits(self):
            return [
                self.city.strip().lower() == self.correct["city"].lower(),
                self.country.strip().lower() == self.correct["country"].lower(),
            ]

        def verify(self) -> bool:
            return all(self._hits())

        def verify_granular(self) -> float:
            hits = self._hits()
            return sum(hits) / len(hits)
    """
)

QUESTION = "What is the capital of France, and which country is it in?"

CORRECT = "The capital is Paris, in France."
WRONG = "The capital is Lyon, in Spain."
PARTIAL = "The capital is Paris, in Belgium."
# Long enough to fail the "concise" regex trait (at most 60 characters).
VERBOSE_CORRECT = (
    "After checking several sources at length, I can say the capital is Paris, in France."
)

#: Judge replies: template fields, plus the LLM trait "clarity" (1-5) and the
#: lower-is-better boolean trait "hedging".
JUDGE_ANSWERS: dict[str, Any] = {
    CORRECT: {"fields": {"city": "Paris", "country": "France", "clarity": 5, "hedging": False}},
    WRONG: {"fields": {"city": "Lyon", "country": "Spain", "clarity": 2, "hedging": True}},
    PARTIAL: {"fields": {"city": "Paris", "country": "Belgium", "clarity": 4, "hedging": False}},
    VERBOSE_CORRECT: {
        "fields": {"city": "Paris", "country": "France", "clarity": 3, "hedging": True}
    },
}


def geo_benchmark() -> Benchmark:
    """One question (id ``geo``) with a two-field template and a rubric."""
    rubric = Rubric(
        regex_traits=[RegexTrait(name="concise", pattern=r"^.{0,60}$")],
        llm_traits=[
            LLMRubricTrait(name="clarity", kind="score", min_score=1, max_score=5),
            LLMRubricTrait(name="hedging", kind="boolean", higher_is_better=False),
        ],
    )
    question = Question(
        id="geo", text=QUESTION, raw_answer="Paris, France", answer_template=GEO_TEMPLATE
    )
    return Benchmark(name="geo", questions=[question], global_rubric=rubric)


def nemo_request(response_text: str, *, question: str = QUESTION, **extra: Any) -> dict[str, Any]:
    """A spec-shaped verify request whose agent answered ``response_text``."""
    return {
        "responses_create_params": {"input": [{"role": "user", "content": question}]},
        "response": {
            "output": [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": response_text}],
                }
            ]
        },
        **extra,
    }


#: A reward config whose judge gets one try (a failure shows at once).
ONE_TRY = RewardConfig.build({"verification": {"retry_policy": {"max_attempts": 1}}})


@contextmanager
def geo_service(judge_url: str, reward: RewardConfig = ONE_TRY, **options: Any) -> Iterator[str]:
    """The reward service of :func:`geo_benchmark` in a thread (its base URL),
    judged by ``judge_url``; ``options`` go to ``create_app``."""
    app = create_app(
        geo_benchmark(),
        [ModelConfig.parse(f"{judge_url}#judge")],
        reward,
        resources=reward_resources(),
        **options,
    )
    with serve_in_thread(app, lifespan="off") as served:
        yield served.url
