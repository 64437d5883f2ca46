"""The swap check asks both orders and keeps only a consistent verdict."""

from __future__ import annotations

import pytest
from _support.judges import ScriptedJudge

from verifleet.reward import judge_equivalence
from verifleet.reward._swap import equivalence_messages

SAME = {"equivalent": True}
DIFFERENT = {"equivalent": False}


def test_without_swap_check_one_call_decides() -> None:
    judge = ScriptedJudge(SAME)  # a second call would find the script empty and fail
    verdict = judge_equivalence(
        judge, question="Capital?", reference="Paris", response="paris", swap_check=False
    )
    assert verdict.equivalent and verdict.consistent and verdict.swapped is None
    assert len(judge.calls) == 1


def test_swap_check_rejects_a_position_dependent_verdict() -> None:
    # A judge that agrees only while the reference comes first: a position bias that
    # no real local model shows on demand.
    judge = ScriptedJudge(SAME, DIFFERENT)
    verdict = judge_equivalence(
        judge, question="Capital?", reference="Paris", response="paris", swap_check=True
    )
    assert (verdict.first, verdict.swapped, verdict.consistent, verdict.equivalent) == (
        True,
        False,
        False,
        False,
    )
    assert judge.user(0).index("Paris") < judge.user(0).index("paris")
    assert judge.user(1).index("paris") < judge.user(1).index("Paris")


@pytest.mark.parametrize("swap", [True, False])
@pytest.mark.parametrize("reply", [SAME, DIFFERENT])
def test_consistent_judge_gives_its_verdict(swap: bool, reply: dict[str, bool]) -> None:
    judge = ScriptedJudge(reply, reply)
    verdict = judge_equivalence(judge, question="q", reference="a", response="b", swap_check=swap)
    assert verdict.consistent and verdict.equivalent is reply["equivalent"]
    assert len(judge.calls) == (2 if swap else 1)


def test_prompt_keeps_the_given_order() -> None:
    text = equivalence_messages("Q", "first", "second")[-1]["content"]
    assert text.index("ANSWER 1:\nfirst") < text.index("ANSWER 2:\nsecond")
