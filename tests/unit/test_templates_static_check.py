"""The static checks alone (``static_template_problem``: parse and the guard,
what ``submit`` asks of each template by default) say what the full compile
says for what they find, in the same words, and find nothing in a template
that only its compile can refuse. The guard's one walk finds what a plain
``ast.walk`` does, in the same order."""

from __future__ import annotations

import ast

import pytest

from verifleet.schemas import TemplateValidationError
from verifleet.templates import static_template_problem, validate_answer_template
from verifleet.templates.ast_guard import find_violation

_VERIFY = "\nclass Answer(BaseAnswer):\n    def verify(self):\n        return True\n"


def _compile_problem(source: str) -> str:
    with pytest.raises(TemplateValidationError) as info:
        validate_answer_template(source)
    return info.value.problem


@pytest.mark.parametrize(
    "source",
    [
        "class Answer(:\n    pass\n",
        "import os\n" + _VERIFY,
        "k = ().__class__\n" + _VERIFY,
        "data = open('/etc/passwd')\n" + _VERIFY,
        "class Answer(BaseAnswer):\n    x: \"__import__('os').getcwd()\" = None\n"
        "    def verify(self):\n        return True\n",
        "   \n",
    ],
    ids=["syntax", "import", "dunder", "builtin", "string-annotation", "empty"],
)
def test_what_the_static_checks_find_is_worded_as_the_compile_words_it(source: str) -> None:
    problem = static_template_problem(source)
    assert problem is not None
    assert problem == _compile_problem(source)


@pytest.mark.parametrize(
    ("source", "compile_says"),
    [
        ("x = 1 / 0\n" + _VERIFY, "raised ZeroDivisionError while loading"),
        (
            "class Answer(BaseAnswer):\n    def model_post_init(self, context):\n"
            "        self.correct = [1]\n\n    def verify(self):\n        return True\n",
            "must be a dict",
        ),
        ("x = 1\n", "defines no answer class"),
    ],
)
def test_what_only_the_compile_finds_passes_the_static_checks(
    source: str, compile_says: str
) -> None:
    assert static_template_problem(source) is None
    assert compile_says in _compile_problem(source)


@pytest.mark.parametrize(
    ("source", "first", "line"),
    [
        # Breadth first: the module-level import before the call inside the function.
        ("def f():\n    return eval('1')\nimport os\n", "imports 'os'", 3),
        # A refused attribute outranks a string annotation, wherever they are.
        ("x: \"__import__('os')\" = 1\ny = ().__class__\n", "dunder attributes", 2),
        # Deeper on an earlier line, shallower on a later one: the shallower first.
        ("a = [[[[open]]]]\nb = vars\n", "uses 'vars'", 2),
        # Only a string annotation: found after the whole tree, at its line.
        ("x = 1\ny: \"__import__('os')\" = 1\n", "uses '__import__'", 2),
    ],
)
def test_the_guard_reports_the_first_refusal_in_walk_order(
    source: str, first: str, line: int
) -> None:
    found = find_violation(ast.parse(source))
    assert found is not None
    assert first in found[0] and found[1] == line
