"""The capitals workload as an inspect_ai task (``bench/vs_inspect.py`` runs it).

Each sample is one question of ``bench._harness.capitals``: the solver asks the
model for an answer, the scorer asks the same model to extract the city as JSON
(a ``json_schema`` response format, as verifleet's parsing call does) and
compares it with the target: two model calls per sample, as per verifleet unit.
Read by ``inspect eval`` in a venv of its own (inspect_ai is not one of
verifleet's dependencies); ``VF_INSPECT_QUESTIONS`` names the questions file
(a JSON list of ``[question, city]``).
"""

from __future__ import annotations

import json
import os

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import GenerateConfig, ResponseSchema, get_model
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import TaskState, generate
from inspect_ai.util import json_schema
from pydantic import BaseModel


class Extracted(BaseModel):
    """The parsing call's reply."""

    city: str


@scorer(metrics=[accuracy()])
def parse_and_verify():  # type: ignore[no-untyped-def]
    """Extract the city with a second call (JSON schema) and compare."""

    async def score(state: TaskState, target: Target) -> Score:
        prompt = (
            f"Question: {state.input_text}\nResponse: {state.output.completion}\n"
            "Extract the city the response names as the capital, as JSON."
        )
        reply = await get_model().generate(
            prompt,
            config=GenerateConfig(
                response_schema=ResponseSchema(name="Answer", json_schema=json_schema(Extracted))
            ),
        )
        try:
            city = Extracted.model_validate_json(reply.completion).city
        except ValueError:
            return Score(value=INCORRECT, explanation="unparsable reply")
        same = city.strip().lower() == target.text.lower()
        return Score(value=CORRECT if same else INCORRECT, answer=city)

    return score


@task
def capitals() -> Task:
    """Every question of the questions file, one epoch."""
    with open(os.environ["VF_INSPECT_QUESTIONS"], encoding="utf-8") as fh:
        pairs = json.load(fh)
    samples = [Sample(input=q, target=city, id=i) for i, (q, city) in enumerate(pairs)]
    return Task(dataset=samples, solver=generate(), scorer=parse_and_verify())
