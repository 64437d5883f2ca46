"""The loading budget counts template steps (loop passes, calls, comprehension
clauses, lambdas) through instrumented code, not a trace function: every way
template code can repeat while loading is stopped, the same code runs freely in
``verify()``, and the instrumentation changes nothing else a template sees."""

from __future__ import annotations

import sys
import textwrap

import pytest

from verifleet.schemas import TemplateValidationError
from verifleet.templates import validate_answer_template
from verifleet.templates.budget import TemplateBudgetExceeded, step, step_budget

QID = "q-budget"

_RUNAWAYS = {
    "recursion": """
        def grow(n):
            return grow(n - 1) + grow(n - 1) if n else 1

        SIZE = grow(60)
        """,
    "lambda recursion": """
        grow = lambda n: grow(n - 1) + grow(n - 1) if n else 1
        SIZE = grow(60)
        """,
    "generator expression in a builtin": """
        SIZE = sum(1 for _ in range(10 ** 12))
        """,
    "nested comprehension": """
        SIZE = len([1 for _ in range(10 ** 6) for _ in range(10 ** 6)])
        """,
    "a method pydantic calls": """
        class Answer(BaseAnswer):
            def model_post_init(self, context):
                while True:
                    self.correct = {}

            def verify(self):
                return True
        """,
}


def _load(body: str) -> type:
    source = textwrap.dedent(body)
    if "class Answer" not in source:
        source += "\nclass Answer(BaseAnswer):\n    def verify(self):\n        return True\n"
    return validate_answer_template(source, question_id=QID)


@pytest.mark.parametrize("body", list(_RUNAWAYS.values()), ids=list(_RUNAWAYS))
def test_every_way_to_repeat_while_loading_is_stopped(body: str) -> None:
    with pytest.raises(TemplateValidationError, match="ran more than 200000 steps"):
        _load(body)


def test_the_same_loop_runs_freely_in_verify() -> None:
    # Control for the loop above: 300,000 passes, past the loading budget, are
    # fine at run time (the unit's deadline bounds verify()).
    cls = _load(
        """
        class Answer(BaseAnswer):
            def verify(self):
                total = 0
                for i in range(300000):
                    total += 1
                return total == 300000 and len([1 for _ in range(300000)]) == 300000
        """
    )
    assert cls().verify() is True


def test_instrumented_code_keeps_docstrings_values_and_line_numbers() -> None:
    cls = _load(
        '''
        class Answer(BaseAnswer):
            def verify(self):
                """Says yes."""
                double = lambda x: x * 2
                return [double(i) for i in range(3) if i] == [2, 4]

            def verify_granular(self):
                raise ValueError("line eight")
        '''
    )
    assert cls.verify.__doc__ == "Says yes."
    assert cls().verify() is True
    with pytest.raises(ValueError) as info:
        cls().verify_granular()
    assert info.traceback[-1].lineno + 1 == 9  # 0-based in pytest; the source's line 9


def test_template_source_cannot_name_the_step_counter() -> None:
    with pytest.raises(TemplateValidationError, match="dunder names"):
        _load("__verifleet_step__ = None\n")


def test_a_budget_counts_steps_on_its_own_thread_without_a_trace_function() -> None:
    assert step() is True  # no budget: nothing counted, nothing raised
    before = sys.gettrace()
    with step_budget(2):
        assert sys.gettrace() is before
        step()
        step()
        with pytest.raises(TemplateBudgetExceeded, match="more than 2 steps"):
            step()
    assert step() is True
