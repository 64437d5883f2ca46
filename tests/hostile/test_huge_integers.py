"""Integers past Python's 4,300-digit limit for integer strings are refused
inside the executor, with an error naming the template, and the executor
lives on (issue 34, item 7).

Before, a judge value of 5,000 digits made the executor's request unreadable
(its reply named no request: the host killed and replaced the executor), and a
ground truth of 7**6000 made the executor's answer unreadable on the host
("the executor sent something that is not a reply", replaced again). The
control is an integer of exactly 4,300 digits, which goes through both ways.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from verifleet.sandbox import SandboxPool, SandboxSettings
from verifleet.schemas import TemplateValidationError

pytestmark = pytest.mark.integration

TAKES_AN_INT = """
from verifleet.templates import BaseAnswer


class Answer(BaseAnswer):
    value: int

    def model_post_init(self, context):
        self.correct = {"value": GROUND_TRUTH}

    def verify(self) -> bool:
        return self.value > 0
"""


def _int_of(digits: int) -> int:
    """A positive integer of ``digits`` digits (made without the string limit)."""
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return int("7" * digits)
    finally:
        sys.set_int_max_str_digits(old)


@pytest.fixture(params=["strict", "seccomp"])
def pool(request: pytest.FixtureRequest) -> Iterator[SandboxPool]:
    sandbox = SandboxPool(SandboxSettings(mode=request.param, pool_size=1, timeout=5))
    try:
        yield sandbox
    finally:
        sandbox.close()


def test_a_judge_value_past_the_limit_is_refused_naming_the_template(pool: SandboxPool) -> None:
    handle = pool.load_template(TAKES_AN_INT.replace("GROUND_TRUTH", "1"), "q-judge")
    with pytest.raises(TemplateValidationError) as info:
        pool.evaluate(handle, {"value": _int_of(5000)}, "")
    message = str(info.value)
    assert f"template {handle.template_id} (question q-judge)" in message, message
    assert "5000 digits" in message and "4300" in message
    # The same executor answers the next call: it was not replaced.
    evaluation = pool.evaluate(handle, {"value": _int_of(4300)}, "")
    assert evaluation.verification is not None and evaluation.verification.field_ok is True
    assert pool.stats().replacements == 0


def test_an_answer_past_the_limit_is_refused_naming_the_template(pool: SandboxPool) -> None:
    # 7**6000 has 5,071 digits: the template makes it without any string.
    source = TAKES_AN_INT.replace("GROUND_TRUTH", "7 ** 6000")
    with pytest.raises(TemplateValidationError) as info:
        pool.load_template(source, "q-answer")
    message = str(info.value)
    assert "(question q-answer)" in message and "its answer" in message, message
    assert "5071 digits" in message
    assert pool.stats().replacements == 0


def test_control_an_integer_at_the_limit_goes_through_both_ways(pool: SandboxPool) -> None:
    at_limit = _int_of(4300)
    source = TAKES_AN_INT.replace("GROUND_TRUTH", "7 ** 5088")  # 4,300 digits
    handle = pool.load_template(source, "q-control")
    assert handle.ground_truth() == {"value": 7**5088}
    evaluation = pool.evaluate(handle, {"value": at_limit}, "")
    assert evaluation.parsed == {"value": at_limit}
    assert pool.stats().replacements == 0
