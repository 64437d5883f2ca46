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
from pathlib import Path

import pytest

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


def _stat(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text.rsplit(")", 1)[1].split()


def _template_processes() -> list[int]:
    """Descendants of this process that lead a process group of their own
    below the executor's (template processes do; the router and the spawner
    share the executor's group)."""
    parents: dict[int, int] = {}
    groups: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                fields = _stat(int(name))
            except OSError:
                continue
            parents[int(name)] = int(fields[1])
            groups[int(name)] = int(fields[2])

    def depth(pid: int) -> int:
        steps = 0
        while pid in parents and pid != os.getpid():
            pid, steps = parents[pid], steps + 1
        return steps if pid == os.getpid() else -1

    # host -> router (depth 1) -> spawner (2) -> template process (3)
    return [pid for pid in parents if depth(pid) == 3 and groups[pid] == pid]


def _second_call(disturb: signal.Signals | None) -> str:
    pool = SandboxPool(SandboxSettings(mode="seccomp", pool_size=1, timeout=3))
    try:
        with pool.scoped("job"):
            handle = pool.load_template(TEMPLATE, "q")
            first = pool.evaluate(handle, {"value": "Paris"}, "")
            assert first.verification is not None and first.verification.field_ok
            if disturb is not None:
                (victim,) = _template_processes()
                os.kill(victim, disturb)
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
    assert "killed by SIGTERM from outside" in error, error
    assert "exhausted" not in error


def test_control_left_alone_the_second_call_answers() -> None:
    assert _second_call(None) == "field_ok=True"
