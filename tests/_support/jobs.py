"""A small generated benchmark whose answers a fake endpoint knows, for fleet and
local-mode tests (the endpoint is the fault-injecting test double of bench/)."""

from __future__ import annotations

import textwrap
from typing import Any

from verifleet.schemas import Benchmark, Question

TEMPLATE = textwrap.dedent(
    """
    from pydantic import Field

    from karenina.schemas.entities import BaseAnswer


    class Answer(BaseAnswer):
        city: str = Field(description="The city the response names as the capital")

        def model_post_init(self, __context):
            self.correct = {"city": "CITY"}

        def verify(self) -> bool:
            return self.city.strip().lower() == self.correct["city"].lower()
    """
)


def capitals_benchmark(n: int, *, wrong_every: int = 4) -> tuple[Benchmark, dict[str, Any]]:
    """``n`` questions and the endpoint's answers map: every ``wrong_every``-th
    question is answered wrongly, so results mix passes and fails."""
    questions = []
    answers: dict[str, Any] = {}
    for i in range(n):
        city = f"Capital{i}"
        text = f"What is the capital of Country{i}?"
        questions.append(
            Question(
                id=f"q{i:04d}",
                text=text,
                raw_answer=city,
                answer_template=TEMPLATE.replace("CITY", city),
            )
        )
        said = f"Wrong{i}" if wrong_every and i % wrong_every == 0 else city
        answers[text] = {"text": f"The capital is {said}.", "fields": {"city": said}}
    return Benchmark(name="capitals", questions=questions), answers


def comparable(results: Any) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """The deterministic content of results (no timestamps, timings or ids), keyed
    by unit and parsing model."""
    out = {}
    for r in results:
        m = r.metadata
        key = (m.question_id, m.answering.canonical_key, m.parsing.canonical_key, m.replicate)
        t = r.template
        out[key] = (
            m.completed_without_errors,
            t.verify_result if t else None,
            t.parsed_llm_response if t else None,
            t.parsed_gt_response if t else None,
            t.raw_llm_response if t else None,
        )
    return out
