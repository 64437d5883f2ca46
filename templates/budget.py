"""A line budget for template code that runs while a template is loaded.

Loading runs under the process-wide compile lock, so a template whose module body
or ground-truth code never finishes would stall every later compile in the worker.
While the budget is active, each line executed in template code (recognised by its
``<template ...>`` file name) counts; past the limit :class:`TemplateBudgetExceeded`
is raised inside the template's frame and loading fails. Library code the template
calls (pydantic building the class) is not traced, so it costs nearly nothing.

The budget covers loading only; ``verify()`` at run time is bounded by the unit's
deadline, like every other step.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["TEMPLATE_FILENAME_PREFIX", "TemplateBudgetExceeded", "line_budget"]

#: Code objects compiled from template source carry file names starting with this.
TEMPLATE_FILENAME_PREFIX = "<template "


class TemplateBudgetExceeded(BaseException):
    """Template code executed more lines than the loading budget allows.

    A ``BaseException`` so that a template's own ``except Exception`` cannot
    swallow it and keep looping.
    """


@contextmanager
def line_budget(max_lines: int) -> Iterator[None]:
    """Trace the current thread and stop template code after ``max_lines`` lines.

    Restores whatever trace function was installed before (a debugger, coverage).

    Raises:
        TemplateBudgetExceeded: Inside the template frame that crossed the limit;
            it propagates out of the ``with`` block.
    """
    executed = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal executed
        if event == "line":
            executed += 1
            if executed > max_lines:
                raise TemplateBudgetExceeded(
                    f"template code ran more than {max_lines} lines while loading"
                )
        return local

    def global_(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename.startswith(TEMPLATE_FILENAME_PREFIX):
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(global_)
    try:
        yield
    finally:
        sys.settrace(previous)
