"""A scenario's own code, run in the sandbox like a template's.

The original framework lets a scenario carry Python: a node's state update
(``state_update(accumulated, parsed_fields)`` returning the new accumulated
state), an edge's condition (``when=lambda state: ...``), an outcome criterion's
evaluation (``evaluate(result)``) and an edge's handover
(``handover(tagged_messages, state)`` returning the next node's conversation).
Each call is one :class:`~verifleet.sandbox._protocol.ScenarioCodeRequest`,
answered by a one-shot child of an executor (a fresh process under the same
namespaces, seccomp filter, rlimits and wall clock as a template call): nothing
one call changes outlives it, and a call that hangs or crashes fails alone.

Executor side (:func:`run_scenario_code`): the source is a Python expression
(``lambda ...``, what the original stores) or a block defining one function.
It is checked and runs as a template's code does: the same static guard and the
same restricted builtins, inside the same sandbox. The arguments are JSON data
turned back into objects with the original's attribute names (``state.accumulated``, ``turn.parsed_fields``,
``result.history``), and the value goes back as JSON data.

Host side (:func:`call_scenario_code`): one round trip through a pool.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal

from pydantic_core import to_jsonable_python

from verifleet.templates.ast_guard import find_violation
from verifleet.templates.sandbox import new_template_namespace

from ._errors import SandboxError, SandboxUnavailable
from ._protocol import ScenarioCodeRequest, ScenarioCodeResult
from ._runtime import RequestError

if TYPE_CHECKING:
    from ._pool import SandboxPool

__all__ = [
    "ScenarioCodeError",
    "ScenarioCodeRole",
    "call_scenario_code",
    "run_scenario_code",
]

ScenarioCodeRole = Literal["state_update", "condition", "evaluate", "handover"]


class ScenarioCodeError(SandboxError):
    """A scenario's code failed. ``raised`` is True when the code itself raised
    or returned something unusable (the original's semantics apply: a condition
    does not match, a state update is undone); False when it crashed, hung or
    could not run at all (the run fails)."""

    def __init__(self, message: str, *, raised: bool) -> None:
        super().__init__(message)
        self.raised = raised


# --- executor side ----------------------------------------------------------------------


class _RequestError(SandboxError):
    pass


def _load(source: str) -> Any:
    """The function ``source`` defines, compiled as a template's code is: the
    same static guard (no imports outside the allowed modules, no dunders, no
    ``open``/``eval``...) and the same restricted builtins. In ``seccomp`` mode
    the process may read what its uid may read: the guard is what refuses it.

    Raises:
        _RequestError: a construct the guard forbids.
    """
    try:
        tree: ast.AST = ast.parse(source, mode="eval")
    except SyntaxError:
        tree = ast.parse(source, mode="exec")
    violation = find_violation(tree)
    if violation is not None:
        problem, line = violation
        raise _RequestError(f"refused by the sandbox (line {line}): {problem}")
    namespace = new_template_namespace("scenario_code")
    if isinstance(tree, ast.Expression):
        return eval(compile(tree, "<scenario code>", "eval"), namespace)
    assert isinstance(tree, ast.Module)
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    exec(compile(tree, "<scenario code>", "exec"), namespace)
    return namespace[names[-1]]


def _ns(value: Any) -> Any:
    """Mappings as attribute objects one level deep, as the original's dataclasses."""
    return SimpleNamespace(**value) if isinstance(value, Mapping) else value


def _turn(data: Mapping[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(
        node_id=data.get("node_id"),
        question_text=data.get("question_text", ""),
        question_messages=[],
        trace_messages=[],
        raw_response=data.get("raw_response", ""),
        parsed_answer=None,
        parsed_fields=dict(data.get("parsed_fields") or {}),
        verify_result=data.get("verify_result"),
        verification_result_id=(data.get("result_ids") or [None])[0],
    )


def _state(data: Mapping[str, Any], history: list[Any]) -> SimpleNamespace:
    return SimpleNamespace(
        turn=data.get("turn", 0),
        current_node=data.get("current_node"),
        verify_result=data.get("verify_result"),
        parsed=dict(data.get("parsed") or {}),
        node_visits=dict(data.get("node_visits") or {}),
        history=[_turn(t) for t in history],
        accumulated=dict(data.get("accumulated") or {}),
        node_results=dict(data.get("node_results") or {}),
    )


def _result(data: Mapping[str, Any]) -> SimpleNamespace:
    history = list(data.get("history") or [])
    failure = data.get("terminal_failure")
    return SimpleNamespace(
        scenario_id=data.get("scenario_id"),
        status=data.get("status"),
        path=list(data.get("path") or []),
        turn_count=data.get("turn_count", 0),
        history=[_turn(t) for t in history],
        turn_results=[],
        final_state=_state(data.get("final_state") or {}, history),
        outcome_results={},
        terminal_failure=_ns(failure) if failure else None,
        replicate=data.get("replicate"),
    )


def _tagged(data: Mapping[str, Any]) -> SimpleNamespace:
    text = str(data.get("content", ""))
    message = SimpleNamespace(role=data.get("role"), content=text, text=text)
    return SimpleNamespace(message=message, agent_id=data.get("agent_id"))


def _message(item: Any) -> dict[str, str]:
    """One returned message as ``{role, content}`` (a tagged message, a
    mapping, or anything with ``role`` and ``content``/``text``)."""
    item = getattr(item, "message", item)
    if isinstance(item, Mapping):
        role, content = item.get("role"), item.get("content", item.get("text"))
    else:
        role = getattr(item, "role", None)
        content = getattr(item, "content", getattr(item, "text", None))
    role = getattr(role, "value", role)
    if role not in ("system", "user", "assistant") or not isinstance(content, str):
        raise _RequestError(f"a handover returned {item!r}, not a message with a role and text")
    return {"role": str(role), "content": content}


def _apply(role: str, func: Any, args: Mapping[str, Any]) -> Any:
    if role == "state_update":
        value = func(dict(args.get("accumulated") or {}), dict(args.get("parsed") or {}))
        if not isinstance(value, Mapping):
            raise _RequestError(f"returned {type(value).__name__}, not a dict")
        return dict(value)
    if role == "condition":
        return bool(func(_state(args.get("state") or {}, args.get("history") or [])))
    if role == "evaluate":
        value = func(_result(args.get("result") or {}))
        if not isinstance(value, bool | int | float):
            raise _RequestError(f"returned {type(value).__name__}, not a bool or number")
        return value
    state = _state(args.get("state") or {}, args.get("history") or [])
    value = func([_tagged(m) for m in args.get("messages") or []], state)
    return [_message(m) for m in value or []]


def run_scenario_code(request: ScenarioCodeRequest) -> ScenarioCodeResult:
    """Run one call of scenario code (in the child that is its sandbox).

    Raises:
        RequestError: ``scenario`` when the code does not load, raises, or
            returns a value of the wrong kind or not JSON data.
    """
    try:
        func = _load(request.source)
        value = _apply(request.role, func, request.args)
        return ScenarioCodeResult(value=to_jsonable_python(value))
    except (MemoryError, RecursionError):
        raise
    except _RequestError as exc:
        raise RequestError("scenario", str(exc)) from None
    except BaseException as exc:  # the author's code may raise anything
        raise RequestError("scenario", f"{type(exc).__name__}: {exc}") from None


# --- host side ----------------------------------------------------------------------------


def call_scenario_code(
    pool: SandboxPool, role: ScenarioCodeRole, source: str, args: Mapping[str, Any]
) -> Any:
    """Run scenario code in one of ``pool``'s executors (in the current job's
    scope) and return its value.

    Raises:
        ScenarioCodeError: ``raised`` True when the code raised or returned an
            unusable value; False when it crashed or hung its process, or the
            sandbox failed.
    """
    from ._errors import ExecutorCrashed
    from ._pool import _SCOPE

    scope = _SCOPE.get() or ""
    try:
        reply = pool._call(
            lambda i, _: ScenarioCodeRequest(
                id=i, role=role, source=source, args=dict(args), scope=scope
            )
        )
    except (ExecutorCrashed, SandboxUnavailable) as exc:
        raise ScenarioCodeError(f"the sandbox failed: {exc}", raised=False) from None
    if reply.ok:
        return ScenarioCodeResult.model_validate(reply.result).value
    error = reply.error
    kind = error.kind if error is not None else "internal"
    message = error.message if error is not None else "unknown error"
    if kind == "scenario":
        raise ScenarioCodeError(message, raised=True)
    if kind == "timeout":
        raise ScenarioCodeError(f"ran too long: {message}", raised=False)
    if kind == "crash":
        raise ScenarioCodeError(f"exhausted or killed its process: {message}", raised=False)
    raise ScenarioCodeError(f"sandbox {kind} error: {message}", raised=False)
