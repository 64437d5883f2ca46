"""Question and Benchmark models: ids, template ids, lookups, rubric merging, validate()."""

from __future__ import annotations

import base64
import hashlib

import pytest
from pydantic import ValidationError

from verifleet.schemas import Benchmark, Question, RubricError

GOOD_TEMPLATE = """class Answer(BaseAnswer):
    value: int = Field(description="the number")

    def ground_truth(self):
        return {"value": 4}

    def verify(self) -> bool:
        return self.value == 4
"""


def test_question_id_defaults_to_md5_of_text() -> None:
    question = Question(text="What is 2+2?")
    assert question.id == hashlib.md5(b"What is 2+2?").hexdigest()


def test_question_accepts_question_key_and_keeps_given_id() -> None:
    question = Question.model_validate({"id": "q1", "question": "Why?"})
    assert (question.id, question.text) == ("q1", "Why?")


def test_question_text_is_required() -> None:
    with pytest.raises(ValidationError):
        Question.model_validate({"raw_answer": "4"})


def test_template_id_ignores_line_endings_and_trailing_whitespace() -> None:
    unix = Question(text="q", answer_template=GOOD_TEMPLATE)
    windows = Question(text="q", answer_template=GOOD_TEMPLATE.replace("\n", "  \r\n"))
    assert unix.template_id == windows.template_id
    assert len(unix.template_id) == 32
    assert Question(text="q").template_id == "no_template"
    assert Question(text="q", answer_template="  \n").template_id == "no_template"
    assert not Question(text="q", answer_template="  \n").has_template


def test_benchmark_rejects_duplicate_question_ids() -> None:
    with pytest.raises(ValidationError, match="'same' is used by more than one question"):
        Benchmark(
            name="b", questions=[Question(id="same", text="a"), Question(id="same", text="b")]
        )


def test_get_question() -> None:
    benchmark = Benchmark(name="b", questions=[Question(id="q1", text="a")])
    assert benchmark.get_question("q1").text == "a"
    assert benchmark.question_ids == ["q1"]
    with pytest.raises(KeyError, match="no question 'q2'"):
        benchmark.get_question("q2")


def test_get_question_after_the_list_grew() -> None:
    benchmark = Benchmark(name="b", questions=[Question(id="q1", text="a")])
    benchmark.questions.append(Question(id="q2", text="b"))
    assert benchmark.get_question("q2").text == "b"


def _benchmark_with_rubrics(question_traits: list[dict[str, object]]) -> Benchmark:
    return Benchmark.model_validate(
        {
            "name": "b",
            "global_rubric": {"traits": [{"name": "clarity", "kind": "score"}]},
            "questions": [
                {"id": "q1", "text": "a", "question_rubric": {"traits": question_traits}},
                {"id": "q2", "text": "b"},
            ],
        }
    )


def test_rubric_for_merges_global_and_question() -> None:
    benchmark = _benchmark_with_rubrics([{"trait_type": "regex", "name": "cite", "pattern": "x"}])
    merged = benchmark.rubric_for("q1")
    assert merged is not None
    assert merged.get_trait_names() == ["clarity", "cite"]
    only_global = benchmark.rubric_for(benchmark.get_question("q2"))
    assert only_global is not None and only_global.get_trait_names() == ["clarity"]


def test_rubric_for_clash_names_trait_and_question() -> None:
    benchmark = _benchmark_with_rubrics([{"name": "clarity"}])
    with pytest.raises(RubricError, match=r"'clarity'.*global rubric.*question q1"):
        benchmark.rubric_for("q1")


def test_validate_lists_template_and_rubric_problems() -> None:
    benchmark = Benchmark(
        name="b",
        questions=[
            Question(id="ok", text="a", answer_template=GOOD_TEMPLATE),
            Question(id="broken", text="b", answer_template="class Answer(BaseAnswer)\n"),
            Question(id="none", text="c"),
        ],
    )
    problems = benchmark.validate()
    assert len(problems) == 1
    assert problems[0].startswith("question broken: template:")
    clash = _benchmark_with_rubrics([{"name": "clarity"}])
    assert [p.split(":")[0] for p in clash.validate()] == ["question q1"]


def test_benchmark_json_round_trip() -> None:
    benchmark = _benchmark_with_rubrics([{"trait_type": "regex", "name": "cite", "pattern": "x"}])
    assert Benchmark.model_validate_json(benchmark.model_dump_json()) == benchmark


def test_validate_reports_callable_problems() -> None:
    untrusted_blob = base64.b64encode(b"\x80\x05N.").decode()
    benchmark = Benchmark.model_validate(
        {
            "name": "b",
            "global_rubric": {
                "traits": [
                    {"trait_type": "callable", "name": "pickled", "callable_code": untrusted_blob}
                ]
            },
            "questions": [
                {
                    "id": "q1",
                    "text": "a",
                    "question_rubric": {
                        "traits": [
                            {
                                "trait_type": "callable",
                                "name": "imports_os",
                                "callable_source": "import os\ndef f(t):\n    return True\n",
                            }
                        ]
                    },
                }
            ],
        }
    )
    problems = benchmark.validate()
    assert len(problems) == 2
    assert problems[0].startswith("global rubric: callable trait 'pickled' holds pickled code")
    assert problems[1].startswith("question q1: callable trait 'imports_os' cannot be loaded")
