"""Attacks of one job on another (tests/hostile/cross_job/): an attacker job
that poisons the process its code runs in, or searches it for other jobs' data,
before and after a victim job on the same executors.

The victim's data carries ``VICTIM-`` markers (template source, ground truth,
model response, judge values): none may appear in the attacker's results, and
the victim's verdicts and parsed values after the attack must be exactly those
it gets alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from verifleet.schemas import Benchmark, Question, VerificationResult

__all__ = [
    "ATTACKS",
    "PLANTED_COPY",
    "VICTIM_MARK",
    "VICTIM_REWARDS",
    "attack_source",
    "attacker_benchmark",
    "check_victim",
    "leaks",
    "mixed_benchmark",
    "planting_benchmark",
    "victim_benchmark",
    "victim_rewards",
]

CROSS_DIR = Path(__file__).resolve().parent.parent / "hostile" / "cross_job"

#: The attacker templates, by file stem.
ATTACKS = (
    "poison_model_validate",
    "poison_builtins",
    "poison_judge_schema",
    "read_other_jobs",
)

#: The attacker's copy of the victim's template, described after the attack
#: that forges judge schemas (:func:`planting_benchmark`).
PLANTED_COPY = "copy_of_victim"

#: What marks the victim's data.
VICTIM_MARK = "VICTIM-"

#: Victim question id -> (judge's value, response text, expected verdict).
VICTIM_CASES: dict[str, tuple[str, str, bool]] = {
    "victim_right": ("Paris", "VICTIM-ANSWER-R It is Paris.", True),
    "victim_wrong": ("Rome VICTIM-JUDGE-W", "VICTIM-ANSWER-W It is Rome.", False),
}


def attack_source(stem: str) -> str:
    """The source of one attacker (or the victim) template."""
    return (CROSS_DIR / f"{stem}.tpl").read_text()


def victim_benchmark() -> tuple[Benchmark, dict[str, Any]]:
    """The victim job, and the scripted endpoint's answers for it."""
    source = attack_source("victim")
    questions, answers = [], {}
    for qid, (value, response, _) in VICTIM_CASES.items():
        text = f"VICTIM-QUESTION {qid}: what is the capital of France?"
        questions.append(Question(id=qid, text=text, answer_template=source))
        answers[text] = {"text": response, "fields": {"value": value}}
    return Benchmark(name="victim", questions=questions), answers


def attacker_benchmark() -> tuple[Benchmark, dict[str, Any]]:
    """One question per attack, and the endpoint's answers for them."""
    questions, answers = [], {}
    for stem in ATTACKS:
        text = f"Attack {stem}?"
        questions.append(Question(id=stem, text=text, answer_template=attack_source(stem)))
        answers[text] = {"text": "attacker response", "fields": {"value": "attacker"}}
    return Benchmark(name="attacker", questions=questions), answers


def planting_benchmark() -> tuple[Benchmark, dict[str, Any]]:
    """An attacker job whose first question forges every later judge schema of
    its process (``poison_judge_schema``) and whose second is a byte-identical
    copy of the victim's template: described there, the copy's judge schema
    asks for "Paris" whatever the response says. Run it with one unit at a time
    so that the forging class body is compiled first."""
    questions, answers = [], {}
    for qid, stem in (("poison_judge_schema", "poison_judge_schema"), (PLANTED_COPY, "victim")):
        text = f"Planting {qid}?"
        questions.append(Question(id=qid, text=text, answer_template=attack_source(stem)))
        answers[text] = {"text": "It is Rome.", "fields": {"value": "Rome"}}
    return Benchmark(name="planter", questions=questions), answers


def check_victim(results: list[VerificationResult]) -> None:
    """Every victim question has exactly its own verdict and parsed value."""
    by_question = {r.metadata.question_id: r for r in results}
    assert sorted(by_question) == sorted(VICTIM_CASES)
    for qid, (value, _, expected) in VICTIM_CASES.items():
        result = by_question[qid]
        assert result.metadata.error is None, (qid, result.metadata.error)
        template = result.template
        assert template is not None
        assert template.verify_result is expected, qid
        assert template.parsed_llm_response == {"value": value}, qid


def leaks(dumps: list[str]) -> list[str]:
    """The dumps (results, response bodies) that contain victim data."""
    return [text for text in dumps if VICTIM_MARK in text]


#: The reward ``/verify`` owes each victim question's response, by question id.
VICTIM_REWARDS = {qid: float(case[2]) for qid, case in VICTIM_CASES.items()}


def mixed_benchmark() -> tuple[Benchmark, dict[str, Any]]:
    """One job whose first questions poison their process (pydantic's
    ``model_validate`` replaced, a callable ``bool`` written into builtins by
    ``enum.global_enum``) and whose later questions are the victim's."""
    attackers, answers = attacker_benchmark()
    poisoners = [
        q for q in attackers.questions if q.id in ("poison_model_validate", "poison_builtins")
    ]
    victims, victim_answers = victim_benchmark()
    answers.update(victim_answers)
    return Benchmark(name="mixed", questions=[*poisoners, *victims.questions]), answers


def victim_rewards(client: httpx.Client) -> dict[str, float]:
    """The reward ``/verify`` gives each victim question's response, by question id."""
    rewards = {}
    for qid, (_, response, _) in VICTIM_CASES.items():
        reply = client.post("/verify", json={"question_id": qid, "response": response})
        assert reply.status_code == 200, reply.text
        rewards[qid] = float(reply.json()["reward"])
    return rewards
