"""A template process stopped or killed from outside the sandbox is reported as
that, not as its template's own timeout or crash (issue 34, item 1).

The test process plays the outsider: it finds the template process in its own
executor's tree through /proc (``seccomp`` mode: no pid namespace to hide it)
and sends it SIGSTOP or SIGTERM between two calls. The control is the same
template left alone: its second call answers as its first did.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from _support.processes import spawner_children

from verifleet.sandbox import SandboxPool, SandboxSettings
from verifleet.schemas import TemplateValidationError

pytestmark = pytest.mark.integration

TEMPLATE = """
from verifleet.templates import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "Paris"}

    def verify(self) -> bool:
        return self.value == "Paris"
"""


def _template_processes() -> list[int]:
    """The template processes of this process's executor: children of the
    spawner that lead a process group of their own."""
    return [pid for pid, leads in spawner_children().items() if leads]


def _wait_gone(pid: int) -> None:
    """Until ``pid`` is reaped (its parent, the spawner, reaps it at once)."""
    while Path(f"/proc/{pid}").exists():
        time.sleep(0.01)


def _second_call(disturb: signal.Signals | None) -> str:
    # Earlier tests in this test process may have left pools (the process-wide
    # default one, say) whose template processes are this process's too.
    others = set(_template_processes())
    pool = SandboxPool(SandboxSettings(mode="seccomp", pool_size=1, timeout=3))
    try:
        with pool.scoped("job"):
            handle = pool.load_template(TEMPLATE, "q")
            first = pool.evaluate(handle, {"value": "Paris"}, "")
            assert first.verification is not None and first.verification.field_ok
            if disturb is not None:
                (victim,) = set(_template_processes()) - others
                os.kill(victim, disturb)
                if disturb == signal.SIGTERM:
                    # The router notices the death before the next call (the
                    # case that was replaced silently) or while it is in flight:
                    # wait until it is gone, so the test sees the first case.
                    _wait_gone(victim)
            try:
                second = pool.evaluate(handle, {"value": "Paris"}, "")
            except TemplateValidationError as exc:
                return str(exc)
            assert second.verification is not None
            return f"field_ok={second.verification.field_ok}"
    finally:
        pool.close()


def test_a_stopped_template_process_is_reported_as_stopped() -> None:
    error = _second_call(signal.SIGSTOP)
    assert "stopped by SIGSTOP" in error, error
    assert "ran too long" not in error


def test_a_template_process_killed_from_outside_is_reported_as_killed() -> None:
    error = _second_call(signal.SIGTERM)
    # The death happened between two calls: the next call reports it, never
    # as the victim's own timeout or exhaustion.
    assert "killed by SIGTERM from outside" in error, error
    assert "exhausted" not in error and "ran too long" not in error


def test_after_the_report_the_template_answers_again() -> None:
    # The report is for one call: the next one gets a fresh process.
    others = set(_template_processes())
    pool = SandboxPool(SandboxSettings(mode="seccomp", pool_size=1, timeout=3))
    try:
        with pool.scoped("job"):
            handle = pool.load_template(TEMPLATE, "q")
            assert pool.evaluate(handle, {"value": "Paris"}, "").verification is not None
            (victim,) = set(_template_processes()) - others
            os.kill(victim, signal.SIGTERM)
            _wait_gone(victim)
            with pytest.raises(TemplateValidationError, match="killed by SIGTERM from outside"):
                pool.evaluate(handle, {"value": "Paris"}, "")
            third = pool.evaluate(handle, {"value": "Paris"}, "")
            assert third.verification is not None and third.verification.field_ok
    finally:
        pool.close()


def test_control_left_alone_the_second_call_answers() -> None:
    assert _second_call(None) == "field_ok=True"
