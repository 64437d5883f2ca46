"""The swap check asks both orders and keeps only a consistent verdict."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from verifleet.orchestrator.reward import judge_equivalence
from verifleet.orchestrator.reward._swap import equivalence_messages
from verifleet.pipeline import Message


class PositionBiasedJudge:
    """Says "equivalent" only when ``favoured`` is ANSWER 1: a position bias that
    no real local model shows on demand."""

    def __init__(self, favoured: str | None) -> None:
        self.favoured = favoured
        self.prompts: list[str] = []

    @property
    def model_name(self) -> str:
        return "biased"

    def invoke(self, messages: Sequence[Message], *, stage: str) -> str:
        raise AssertionError("the equivalence judge must ask for JSON")

    def invoke_json(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        schema: dict[str, Any],
        schema_name: str = "response",
    ) -> dict[str, Any]:
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        if self.favoured is None:
            return {"equivalent": True}
        return {"equivalent": f"ANSWER 1:\n{self.favoured}\n" in prompt}


def test_without_swap_check_one_call_decides() -> None:
    judge = PositionBiasedJudge("Paris")
    verdict = judge_equivalence(
        judge, question="Capital?", reference="Paris", response="paris", swap_check=False
    )
    assert verdict.equivalent and verdict.consistent and verdict.swapped is None
    assert len(judge.prompts) == 1


def test_swap_check_rejects_a_position_dependent_verdict() -> None:
    judge = PositionBiasedJudge("Paris")
    verdict = judge_equivalence(
        judge, question="Capital?", reference="Paris", response="paris", swap_check=True
    )
    assert (verdict.first, verdict.swapped, verdict.consistent, verdict.equivalent) == (
        True,
        False,
        False,
        False,
    )
    assert judge.prompts[0].index("Paris") < judge.prompts[0].index("paris")
    assert judge.prompts[1].index("paris") < judge.prompts[1].index("Paris")


@pytest.mark.parametrize("swap", [True, False])
def test_consistent_judge_gives_its_verdict(swap: bool) -> None:
    verdict = judge_equivalence(
        PositionBiasedJudge(None), question="q", reference="a", response="b", swap_check=swap
    )
    assert verdict.equivalent and verdict.consistent


def test_prompt_keeps_the_given_order() -> None:
    text = equivalence_messages("Q", "first", "second")[-1]["content"]
    assert text.index("ANSWER 1:\nfirst") < text.index("ANSWER 2:\nsecond")
