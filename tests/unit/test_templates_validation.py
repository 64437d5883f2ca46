"""Template validation: every refusal is a TemplateValidationError whose message
names the question and the problem; the sandbox refuses OS access and escapes."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verifleet.schemas import TemplateValidationError, compute_template_id, md5_hex
from verifleet.templates import BaseAnswer, validate_answer_template

QID = "q-0042"

VALID = textwrap.dedent(
    """
    from pydantic import Field
    from karenina.schemas.entities import BaseAnswer

    class Answer(BaseAnswer):
        value: int = Field(description="The number")

        def model_post_init(self, __context):
            self.correct = {"value": 23}

        def verify(self) -> bool:
            return self.value == self.correct["value"]
    """
)

_VERIFY = "\nclass Answer(BaseAnswer):\n    def verify(self):\n        return True\n"


def _problem(source: str) -> str:
    with pytest.raises(TemplateValidationError) as info:
        validate_answer_template(source, question_id=QID)
    assert info.value.question_id == QID
    message = str(info.value)
    assert message.startswith(f"question {QID}: ")
    return message


def test_valid_template_returns_its_class() -> None:
    cls = validate_answer_template(VALID, question_id=QID)
    assert issubclass(cls, BaseAnswer)
    assert cls.__name__ == "Answer"
    assert cls.template_source == VALID
    assert cls(value=23).verify() is True


def test_syntax_error_reports_the_line() -> None:
    message = _problem("class Answer(BaseAnswer):\n    value: int = \n")
    assert "does not compile" in message and "(line 2)" in message


def test_no_answer_class() -> None:
    assert "defines no answer class" in _problem("x = 1\n")


def test_two_answer_classes() -> None:
    source = _VERIFY + "\nclass Other(BaseAnswer):\n    def verify(self):\n        return False\n"
    assert "more than one answer class (Answer, Other)" in _problem(source)


def test_intermediate_base_class_is_not_a_second_answer_class() -> None:
    source = textwrap.dedent(
        """
        class Common(BaseAnswer):
            def verify(self):
                return True

        class Answer(Common):
            value: int = Field(description="n")
        """
    )
    assert validate_answer_template(source, question_id=QID).__name__ == "Answer"


def test_missing_verify() -> None:
    source = "class Answer(BaseAnswer):\n    value: int = Field(description='n')\n"
    assert "has no verify() method" in _problem(source)


@pytest.mark.parametrize(
    ("body", "shown"),
    [("['a', 'b']", "list"), ("'paris'", "str"), ("42", "int")],
)
def test_ground_truth_must_be_a_dict(body: str, shown: str) -> None:
    source = textwrap.dedent(
        f"""
        class Answer(BaseAnswer):
            value: str = Field(description="v")

            def model_post_init(self, __context):
                self.correct = {body}

            def verify(self):
                return True
        """
    )
    message = _problem(source)
    assert "ground truth of Answer must be a dict" in message and f"got {shown}" in message


def test_ground_truth_errors_are_reported() -> None:
    source = textwrap.dedent(
        """
        class Answer(BaseAnswer):
            value: str = Field(description="v")

            def ground_truth(self):
                self.correct = {"v": 1 / 0}

            def verify(self):
                return True
        """
    )
    assert "raised ZeroDivisionError" in _problem(source)


def test_error_while_loading_is_reported() -> None:
    assert "raised KeyError while loading" in _problem("x = {}['missing']\n" + _VERIFY)


def test_empty_source() -> None:
    assert "empty" in _problem("   \n")


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        ("import os", "imports 'os'"),
        ("import os.path", "imports 'os.path'"),
        ("from os import system", "imports 'os'"),
        ("import subprocess", "imports 'subprocess'"),
        ("from subprocess import run", "imports 'subprocess'"),
        ("import socket", "imports 'socket'"),
        ("import sys", "imports 'sys'"),
        ("import io", "imports 'io'"),
        ("from . import sibling", "relative import"),
        ("data = open('/etc/passwd').read()", "uses 'open'"),
        ("os = __import__('os')", "uses '__import__'"),
        ("eval('1 + 1')", "uses 'eval'"),
        ("exec('x = 1')", "uses 'exec'"),
        ("g = globals()", "uses 'globals'"),
        ("c = compile('1', 'f', 'eval')", "uses 'compile'"),
        ("k = ().__class__.__bases__[0].__subclasses__()", "dunder attributes"),
        ("k = getattr((), '__class__')", "dunder attributes"),
        ("b = __builtins__", "dunder names"),
        ("f = (x for x in []).gi_frame.f_back", "frame and traceback introspection"),
        ("import re\nc = re._compiler", "private attribute '_compiler'"),
        ("s = '{0.__class__}'.format(1)", "format string"),
        (
            "import pydantic\nt = pydantic.TypeAdapter('int', _parent_depth=3)",
            "underscore keywords",
        ),
    ],
)
def test_sandbox_refusals_name_the_construct(snippet: str, expected: str) -> None:
    message = _problem(snippet + "\n" + _VERIFY)
    assert expected in message


def test_open_inside_verify_is_refused_before_it_runs() -> None:
    source = "class Answer(BaseAnswer):\n    def verify(self):\n        return open('x') is None\n"
    assert "uses 'open'" in _problem(source)


def test_string_annotations_are_checked_too() -> None:
    source = "class Answer(BaseAnswer):\n    x: \"__import__('os').getcwd()\" = None\n" + (
        "    def verify(self):\n        return True\n"
    )
    assert "uses '__import__'" in _problem(source)


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        ("import typing\nm = typing.sys", "has no attribute 'sys'"),
        ("import re\nm = re.enum", "has no attribute 'enum'"),
        ("from typing import get_type_hints", "cannot import name 'get_type_hints'"),
        ("from string import Formatter", "cannot import name 'Formatter'"),
        (
            "from karenina.schemas.entities.conditional import ConditionalGroundTruth",
            "'karenina.schemas.entities.conditional' is not provided to templates",
        ),
        ("k = getattr((), '__cl' + 'ass__')", "'__class__' is not available"),
        # A view keeps no state on itself that a borrowed "self" could read.
        (
            "import typing\ndef grab(self):\n    return self._vf_lookup\nx = grab(typing)",
            "has no attribute '_vf_lookup'",
        ),
        ("import typing\nclass W(type(typing)):\n    pass", "cannot be subclassed"),
        (
            "from pydantic import TypeAdapter\nsetattr(TypeAdapter(int), '_x', 1)",
            "'_x' is not available",
        ),
    ],
)
def test_runtime_guards_catch_what_static_checks_cannot(snippet: str, expected: str) -> None:
    assert expected in _problem(snippet + "\n" + _VERIFY)


def test_allowed_modules_work_inside_templates() -> None:
    source = textwrap.dedent(
        """
        from __future__ import annotations

        import collections.abc
        import json
        import math
        import re
        import statistics
        from dataclasses import dataclass
        from datetime import date
        from decimal import Decimal
        from enum import Enum
        from fractions import Fraction
        from functools import reduce
        from itertools import chain
        from typing import Literal, Optional

        from pydantic import Field, field_validator


        class Colour(Enum):
            RED = "red"


        @dataclass
        class Pair:
            left: int
            right: int


        class Answer(BaseAnswer):
            colour: Literal["red", "blue"] = Field(description="colour")
            values: list[float] = Field(description="values")
            note: Optional[str] = None

            @field_validator("values")
            @classmethod
            def _finite(cls, v: list[float]) -> list[float]:
                return [x for x in v if math.isfinite(x)]

            def verify(self) -> bool:
                total = reduce(lambda a, b: a + b, chain(self.values, [0.0]))
                ok = isinstance(self.values, collections.abc.Sequence)
                return (
                    ok
                    and Colour(self.colour) is Colour.RED
                    and statistics.mean(self.values) == 2.0
                    and Decimal(str(total)) == Decimal("6.0")
                    and Fraction(1, 2) < 1
                    and json.loads("[1]") == [1]
                    and re.fullmatch(r"r.d", self.colour) is not None
                    and date(2020, 1, 1).year == 2020
                    and Pair(1, 2).right == 2
                )
        """
    )
    cls = validate_answer_template(source, question_id=QID)
    assert cls(colour="red", values=[1.0, 2.0, 3.0]).verify() is True


def test_template_id_normalises_line_endings_and_trailing_whitespace() -> None:
    base = "class Answer(BaseAnswer):\n    pass"
    assert compute_template_id(base) == md5_hex(base)
    variants = [
        "class Answer(BaseAnswer):\r\n    pass\r\n",
        "class Answer(BaseAnswer):\r    pass\r",
        "class Answer(BaseAnswer):   \n    pass\t\n\n\n",
    ]
    assert {compute_template_id(v) for v in variants} == {md5_hex(base)}
    assert compute_template_id("class Answer(BaseAnswer):\n  pass") != md5_hex(base)
    assert compute_template_id(None) == "no_template"
    assert compute_template_id(" \n\t") == "no_template"


def test_nested_base_answer_model_is_not_a_second_answer_class() -> None:
    # Shape of the original framework's multi-field fixture: a BaseAnswer used as
    # the type of another BaseAnswer's field.
    source = textwrap.dedent(
        """
        from pydantic import Field
        from karenina.schemas.domain import BaseAnswer

        class Citation(BaseAnswer):
            identifier: str = Field(description="Citation identifier like [1]")
            page: int | None = Field(default=None, description="Page number")

        class Answer(BaseAnswer):
            main_answer: str = Field(description="The primary answer text")
            confidence: float = Field(description="Confidence", ge=0.0, le=1.0)
            citation: Citation | None = Field(default=None, description="Primary citation")

            def model_post_init(self, __context):
                self.correct = {"main_answer": "x", "citation": {"identifier": "[1]", "page": 42}}

            def verify(self) -> bool:
                return (
                    self.main_answer == self.correct["main_answer"]
                    and self.citation is not None
                    and self.citation.page == self.correct["citation"]["page"]
                )
        """
    )
    cls = validate_answer_template(source, question_id=QID)
    assert cls.__name__ == "Answer"
    answer = cls.model_validate(
        {"main_answer": "x", "confidence": 0.5, "citation": {"identifier": "[1]", "page": 42}}
    )
    assert answer.verify() is True


def test_forward_reference_to_a_later_model_is_resolved_in_the_template() -> None:
    source = textwrap.dedent(
        """
        from typing import Optional
        from pydantic import BaseModel, Field

        class Answer(BaseAnswer):
            cite: Optional["Cite"] = Field(default=None, description="citation")

            def verify(self):
                return self.cite is not None and self.cite.page == 42

        class Cite(BaseModel):
            page: int
        """
    )
    cls = validate_answer_template(source, question_id=QID)
    assert cls.model_validate({"cite": {"page": 42}}).verify() is True


@pytest.mark.parametrize(
    ("alias", "expected"),
    [
        ('Optional["Undefined"]', "name 'Undefined' is not defined"),
        # The string is not an annotation itself, so only the restricted namespace
        # stands between it and the real builtins.
        ("Optional[\"__import__('os').getcwd() or int\"]", "import of 'os' is not allowed"),
    ],
)
def test_unresolvable_annotations_are_refused(alias: str, expected: str) -> None:
    source = (
        "from typing import Optional\n"
        f"X = {alias}\n"
        "class Answer(BaseAnswer):\n"
        "    v: X = None\n"
        "    def verify(self):\n"
        "        return True\n"
    )
    message = _problem(source)
    assert "cannot be resolved" in message and expected in message
    assert "errors.pydantic.dev" not in message


def test_fields_may_share_a_name_with_a_refused_builtin() -> None:
    source = textwrap.dedent(
        """
        class Answer(BaseAnswer):
            input: str = Field(description="the input")
            vars: list[str] = Field(default_factory=list, description="variables")

            def verify(self):
                return self.input == "x" and self.vars == []
        """
    )
    cls = validate_answer_template(source, question_id=QID)
    assert cls(input="x").verify() is True
    assert "uses 'input'" in _problem("value = input()\n" + _VERIFY)


@pytest.mark.parametrize(
    "source",
    [
        "while True:\n    pass\n" + _VERIFY,
        "while True:\n    try:\n        x = 1\n    except Exception:\n        pass\n" + _VERIFY,
        (
            "class Answer(BaseAnswer):\n"
            "    def ground_truth(self):\n"
            "        while True:\n"
            "            self.correct = {}\n"
            "    def verify(self):\n"
            "        return True\n"
        ),
    ],
)
def test_runaway_loading_code_is_stopped(source: str) -> None:
    assert "ran more than" in _problem(source)


def test_ordinary_loops_fit_in_the_loading_budget() -> None:
    source = "TABLE = {i: i * i for i in range(20000)}\n" + _VERIFY
    assert validate_answer_template(source, question_id=QID).__name__ == "Answer"


def test_private_names_stay_usable_on_the_templates_own_instances() -> None:
    source = textwrap.dedent(
        """
        class Answer(BaseAnswer):
            value: int = Field(description="n")

            def verify(self):
                setattr(self, "_seen", True)
                return getattr(self, "_seen", False) and hasattr(self, "value")
        """
    )
    cls = validate_answer_template(source, question_id=QID)
    assert cls(value=1).verify() is True


@given(
    lines=st.lists(
        st.text(alphabet=st.characters(blacklist_categories=["Cc", "Cs", "Zl", "Zp"]), max_size=30),
        min_size=1,
        max_size=8,
    ),
    trailing=st.lists(st.sampled_from([" ", "\t", ""]), min_size=8, max_size=8),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_template_id_ignores_line_endings_and_trailing_whitespace(
    lines: list[str], trailing: list[str], newline: str
) -> None:
    canonical = "\n".join(line.rstrip() for line in lines).rstrip()
    noisy = newline.join(line + pad for line, pad in zip(lines, trailing, strict=False)) + newline
    expected = md5_hex(canonical) if canonical.strip() else "no_template"
    assert compute_template_id(noisy) == expected
