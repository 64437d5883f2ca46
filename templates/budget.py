"""A step budget for template code that runs while a template is loaded.

Loading runs under the process-wide compile lock, so a template whose module body
or ground-truth code never finishes would stall every later compile in the worker.
Template source is instrumented when it is compiled (:func:`instrument`): a call
to :func:`step` opens every function body, every pass of a loop, every clause of
a comprehension and every lambda, the places where template code can repeat.
While a budget is active on the thread (:func:`step_budget`), each step counts;
past the limit :class:`TemplateBudgetExceeded` is raised inside the template's
frame and loading fails. Outside a budget a step returns at once.

Not ``sys.settrace``: a trace function is called for every frame the thread
enters, pydantic's own while it builds the class included; that cost a fresh
template process ~0.9 ms of CPU per template (bench/log/2026-11-29_per_question.md).

The budget covers loading only; ``verify()`` at run time is bounded by the unit's
deadline, like every other step.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "STEP_NAME",
    "TEMPLATE_FILENAME_PREFIX",
    "TemplateBudgetExceeded",
    "instrument",
    "step",
    "step_budget",
]

#: Code objects compiled from template source carry file names starting with this.
TEMPLATE_FILENAME_PREFIX = "<template "

#: The global instrumented template code calls (a dunder name: the guard refuses
#: it in template source, so a template can neither call nor rebind it).
STEP_NAME = "__verifleet_step__"


class TemplateBudgetExceeded(BaseException):
    """Template code took more steps than the loading budget allows.

    A ``BaseException`` so that a template's own ``except Exception`` cannot
    swallow it and keep looping.
    """


class _Budget(threading.local):
    #: Steps left on this thread, or None when no budget is active.
    left: int | None = None
    limit: int = 0


_budget = _Budget()


def step() -> bool:
    """Count one step of template code against this thread's budget, if any.

    Returns True (so it can stand in a comprehension's condition).

    Raises:
        TemplateBudgetExceeded: The active budget is spent.
    """
    left = _budget.left
    if left is None:
        return True
    if left <= 0:
        raise TemplateBudgetExceeded(
            f"template code ran more than {_budget.limit} steps (loop passes, calls) while loading"
        )
    _budget.left = left - 1
    return True


@contextmanager
def step_budget(max_steps: int) -> Iterator[None]:
    """Let template code on this thread take at most ``max_steps`` steps.

    Restores the budget that was active before (loading can nest: a probe
    inside a compile).

    Raises:
        TemplateBudgetExceeded: Inside the template frame that crossed the limit;
            it propagates out of the ``with`` block.
    """
    previous = (_budget.left, _budget.limit)
    _budget.left, _budget.limit = max_steps, max_steps
    try:
        yield
    finally:
        _budget.left, _budget.limit = previous


def _step_call(anchor: ast.AST) -> ast.Call:
    """A call of :func:`step`, at ``anchor``'s place in the source (every new node
    located here, so that the tree needs no second walk to fill locations in)."""
    name = ast.copy_location(ast.Name(id=STEP_NAME, ctx=ast.Load()), anchor)
    return ast.copy_location(ast.Call(func=name, args=[], keywords=[]), anchor)


class _Instrument(ast.NodeTransformer):
    def _open(self, body: list[ast.stmt], *, keep_docstring: bool = False) -> list[ast.stmt]:
        at = 0
        if keep_docstring and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            at = 1 if isinstance(value, ast.Constant) and isinstance(value.value, str) else 0
        anchor = body[at] if at < len(body) else body[-1]
        opening = ast.copy_location(ast.Expr(_step_call(anchor)), anchor)
        return [*body[:at], opening, *body[at:]]

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        self.generic_visit(node)
        node.body = self._open(node.body, keep_docstring=True)
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def _loop(self, node: ast.For | ast.AsyncFor | ast.While) -> ast.AST:
        self.generic_visit(node)
        node.body = self._open(node.body)
        return node

    visit_For = visit_AsyncFor = visit_While = _loop

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        self.generic_visit(node)
        node.ifs.insert(0, _step_call(node.target))
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self.generic_visit(node)
        # step() is True: ``True and body`` is the body's value.
        values = [_step_call(node.body), node.body]
        node.body = ast.copy_location(ast.BoolOp(op=ast.And(), values=values), node.body)
        return node


def instrument(tree: ast.Module) -> ast.Module:
    """``tree`` with a :func:`step` call wherever template code can repeat
    (changed in place and returned). Run the guard on the tree first: the calls
    name :data:`STEP_NAME`, which it refuses in template source."""
    _Instrument().visit(tree)
    return tree
