"""Static checks on template source before it runs.

Templates come from benchmark files written by other people, so their code is
checked before anything executes: imports outside the allowed set, calls to
builtins that reach the file system or the interpreter (``open``, ``eval``,
``__import__``...), dunder attributes (the ``().__class__.__subclasses__()`` escape),
private attributes of other objects, frame/traceback introspection, and
underscore keyword arguments (pydantic's ``_parent_depth`` style knobs that reach
outer frames) are refused with a message naming the construct and its line.

Private attributes stay reachable through ``self``/``cls`` (templates use them on
their own instances); since a function can be called with any object as ``self``,
objects handed to templates keep nothing sensitive in attributes (see
``sandbox.ModuleView``). This is a guard against accidents and casual abuse, not a
security boundary: run untrusted benchmarks in a worker without secrets.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

__all__ = [
    "ALLOWED_DUNDER_ATTRIBUTES",
    "FORBIDDEN_ATTRIBUTES",
    "FORBIDDEN_NAMES",
    "find_violation",
    "is_allowed_module",
    "is_dunder",
]

#: Top-level modules a template may import (plus the ``karenina`` aliases).
#: verifleet's own template-facing import path (a view of the template names only).
VERIFLEET_TEMPLATE_MODULES: frozenset[str] = frozenset(
    {"verifleet", "verifleet.schemas", "verifleet.templates"}
)

ALLOWED_MODULE_ROOTS: frozenset[str] = frozenset(
    {
        "__future__",
        "abc",
        "bisect",
        "collections",
        "dataclasses",
        "datetime",
        "decimal",
        "difflib",
        "enum",
        "fractions",
        "functools",
        "heapq",
        "html",
        "itertools",
        "json",
        "karenina",
        "math",
        "numbers",
        "pydantic",
        "re",
        "statistics",
        "string",
        "textwrap",
        "typing",
        "typing_extensions",
        "unicodedata",
    }
)

#: Dotted submodules that may be imported besides the roots themselves.
ALLOWED_SUBMODULES: frozenset[str] = frozenset({"collections.abc"})

FORBIDDEN_NAMES: frozenset[str] = frozenset(
    {
        "__import__",
        "breakpoint",
        "compile",
        "delattr",
        "eval",
        "exec",
        "exit",
        "globals",
        "help",
        "input",
        "locals",
        "memoryview",
        "open",
        "quit",
        "vars",
    }
)

ALLOWED_DUNDER_ATTRIBUTES: frozenset[str] = frozenset(
    {"__init__", "__name__", "__doc__", "__qualname__"}
)

#: Introspection attributes that lead to frames, code objects and their globals.
FORBIDDEN_ATTRIBUTES: frozenset[str] = frozenset(
    {
        "ag_code",
        "ag_frame",
        "cr_code",
        "cr_frame",
        "f_back",
        "f_builtins",
        "f_code",
        "f_globals",
        "f_locals",
        "gi_code",
        "gi_frame",
        "gi_yieldfrom",
        "tb_frame",
        "tb_next",
    }
)

_SELF_NAMES = frozenset({"self", "cls"})
# A str.format field that walks into a private/dunder attribute: "{0.__class__}".
_FORMAT_PRIVATE = re.compile(r"\{[^{}]*\.\s*_")


def is_dunder(name: str) -> bool:
    """``__x__`` style name."""
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def is_allowed_module(dotted: str) -> bool:
    """Whether ``import <dotted>`` is allowed (karenina aliases are checked later)."""
    if dotted in VERIFLEET_TEMPLATE_MODULES:
        return True
    root = dotted.split(".", 1)[0]
    if root not in ALLOWED_MODULE_ROOTS:
        return False
    return dotted == root or root == "karenina" or dotted in ALLOWED_SUBMODULES


def _attribute_problem(node: ast.Attribute) -> str | None:
    attr = node.attr
    if attr in FORBIDDEN_ATTRIBUTES:
        return f"accesses {attr!r}: frame and traceback introspection is not available to templates"
    if is_dunder(attr):
        if attr in ALLOWED_DUNDER_ATTRIBUTES:
            return None
        return f"accesses {attr!r}: dunder attributes are not available to templates"
    if attr.startswith("_"):
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in _SELF_NAMES:
            return None
        if (
            isinstance(owner, ast.Call)
            and isinstance(owner.func, ast.Name)
            and owner.func.id == "super"
        ):
            return None
        return f"accesses private attribute {attr!r} of another object"
    return None


def _call_problem(node: ast.Call) -> str | None:
    for keyword in node.keywords:
        if keyword.arg is not None and keyword.arg.startswith("_"):
            return f"passes keyword argument {keyword.arg!r}: underscore keywords are not allowed"
    func = node.func
    if (
        isinstance(func, ast.Name)
        and func.id in {"getattr", "setattr", "hasattr"}
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
        and node.args[1].value.startswith("__")
    ):
        return f"calls {func.id}() with {node.args[1].value!r}: dunder attributes are not available"
    return None


def _import_problem(node: ast.Import | ast.ImportFrom) -> str | None:
    if isinstance(node, ast.ImportFrom):
        if node.level:
            return "uses a relative import; templates may only import allowed modules"
        names = [node.module or ""]
    else:
        names = [alias.name for alias in node.names]
    for name in names:
        if not is_allowed_module(name):
            allowed = ", ".join(
                sorted((ALLOWED_MODULE_ROOTS | {"verifleet.templates"}) - {"__future__"})
            )
            return f"imports {name!r}, which templates may not use (allowed: {allowed})"
    return None


def _annotation_strings(annotated: list[ast.AST]) -> Iterator[tuple[str, int]]:
    """String constants used as (parts of) the annotations of ``annotated``
    (annotated assignments, arguments, functions' returns): they are evaluated later."""
    for node in annotated:
        annotations: list[ast.expr | None] = []
        if isinstance(node, ast.AnnAssign | ast.arg):
            annotations.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            annotations.append(node.returns)
        for annotation in annotations:
            if annotation is None:
                continue
            for inner in ast.walk(annotation):
                if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                    yield inner.value, inner.lineno


def _name_problem(node: ast.Name) -> str | None:
    # Only reading the name reaches the builtin; a field called ``input`` is fine.
    if node.id in FORBIDDEN_NAMES and isinstance(node.ctx, ast.Load):
        return f"uses {node.id!r}, which templates may not call"
    if is_dunder(node.id) and node.id not in {"__name__", "__doc__"}:
        return f"uses {node.id!r}: dunder names are not available to templates"
    return None


def _constant_problem(node: ast.Constant) -> str | None:
    if isinstance(node.value, str) and _FORMAT_PRIVATE.search(node.value):
        return "contains a format string that reaches private attributes"
    return None


#: The node types that can be refused (:func:`_node_problem`); every other
#: node type only leads to its children.
_CHECKED = frozenset({ast.Import, ast.ImportFrom, ast.Name, ast.Attribute, ast.Call, ast.Constant})


def _node_problem(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return _name_problem(node)
    if isinstance(node, ast.Constant):
        return _constant_problem(node)
    if isinstance(node, ast.Attribute):
        return _attribute_problem(node)
    if isinstance(node, ast.Call):
        return _call_problem(node)
    if isinstance(node, ast.Import | ast.ImportFrom):
        return _import_problem(node)
    return None


#: Checked node types with no node below them but their context (Load/Store).
_LEAVES = frozenset({ast.Name, ast.Constant})

#: Node types whose annotations may hold strings pydantic evaluates later.
_ANNOTATED = (ast.AnnAssign, ast.arg, ast.FunctionDef, ast.AsyncFunctionDef)


def find_violation(tree: ast.AST, *, depth: int = 0) -> tuple[str, int] | None:
    """The first forbidden construct in ``tree`` as ``(problem, line)``, or None.

    Nodes are checked in :func:`ast.walk`'s order (breadth first), so the
    first one found is the one a plain walk finds; string annotations are
    parsed and checked after the whole tree, because pydantic evaluates them.
    One walk serves both: the annotated nodes are noted on the way.
    """
    todo: list[ast.AST] = [tree]
    annotated: list[ast.AST] = []
    checked, annotated_types, ast_type, leaves = _CHECKED, _ANNOTATED, ast.AST, _LEAVES
    index = 0
    # ast.walk's breadth-first order, without its generator and deque: the
    # guard runs on every template a submission or a worker sees.
    while index < len(todo):
        node = todo[index]
        index += 1
        kind = type(node)
        if kind in checked:
            problem = _node_problem(node)
            if problem is not None:
                return problem, getattr(node, "lineno", 0)
            if kind in leaves:
                continue
        elif isinstance(node, annotated_types):
            annotated.append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast_type):
                        todo.append(item)
            elif isinstance(value, ast_type) and name != "ctx":
                # Load/Store/Del have no children and are never refused.
                todo.append(value)
    if depth > 2:
        return None
    for text, line in _annotation_strings(annotated):
        try:
            inner = ast.parse(text.strip(), mode="eval")
        except SyntaxError:
            continue
        found = find_violation(inner, depth=depth + 1)
        if found is not None:
            return found[0], line
    return None
