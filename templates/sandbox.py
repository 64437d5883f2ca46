"""The runtime side of the template sandbox: restricted builtins and imports.

Template code runs in a fresh module namespace whose ``__builtins__`` holds only
harmless builtins, and whose ``__import__`` hands out read-only *views* of the
allowed modules: a view exposes a module's public names (its ``__all__``, minus a
few that evaluate strings with unrestricted globals) and never another module
object, so ``typing.sys`` or ``re.enum`` lead nowhere. ``karenina.*`` imports
resolve to views over verifleet's own template classes.

The namespace is registered in ``sys.modules`` under the template's module name:
pydantic evaluates string annotations in the namespace of the class's module, and
it must find the restricted builtins there, not the real ones.
"""

from __future__ import annotations

import builtins
import importlib
import sys
import threading
import types
import typing
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pydantic

from .ast_guard import FORBIDDEN_ATTRIBUTES, is_allowed_module, is_dunder
from .karenina_compat import KARENINA_ALIAS_MODULES, KARENINA_NAMES
from .verified_field import VerifiedField

__all__ = ["ModuleView", "new_template_namespace", "safe_import"]

# Public names that would let template code evaluate strings or walk objects
# outside the sandbox.
_DENIED_NAMES: dict[str, frozenset[str]] = {
    "typing": frozenset({"get_type_hints", "ForwardRef"}),
    "typing_extensions": frozenset({"get_type_hints", "ForwardRef", "evaluate_forward_ref"}),
    "string": frozenset({"Formatter"}),
    "pydantic": frozenset({"v1"}),
}

_SAFE_BUILTIN_NAMES = [
    "abs",
    "all",
    "any",
    "ascii",
    "bin",
    "bool",
    "bytearray",
    "bytes",
    "callable",
    "chr",
    "classmethod",
    "complex",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "format",
    "frozenset",
    "hash",
    "hex",
    "id",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "map",
    "max",
    "min",
    "next",
    "object",
    "oct",
    "ord",
    "pow",
    "print",
    "property",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "zip",
    "True",
    "False",
    "None",
    "NotImplemented",
    "Ellipsis",
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "BaseException",
    "Exception",
    "IndexError",
    "KeyError",
    "LookupError",
    "NameError",
    "NotImplementedError",
    "OverflowError",
    "RuntimeError",
    "StopIteration",
    "TypeError",
    "ValueError",
    "ZeroDivisionError",
    "UserWarning",
    "Warning",
]


@dataclass(frozen=True)
class _ViewState:
    name: str
    lookup: Callable[[str], object]
    names: frozenset[str]
    children: Mapping[str, ModuleView]


# A view's state lives here, not on the view: any attribute of the view would be
# reachable from template code (e.g. through a method of a subclass called with
# the view as ``self``), and the lookup function leads to the real module.
_VIEW_STATE: weakref.WeakKeyDictionary[ModuleView, _ViewState] = weakref.WeakKeyDictionary()


class ModuleView:
    """Read-only stand-in for a module: public, allowed names only."""

    __slots__ = ("__all__", "__weakref__")

    def __init__(
        self,
        name: str,
        lookup: Callable[[str], object],
        names: frozenset[str],
        children: Mapping[str, ModuleView] | None = None,
    ) -> None:
        _VIEW_STATE[self] = _ViewState(name, lookup, names, dict(children or {}))
        object.__setattr__(self, "__all__", sorted(names))

    def __init_subclass__(cls, **kwargs: object) -> None:
        raise TypeError("module views cannot be subclassed")

    def __getattr__(self, attr: str) -> object:
        state = _VIEW_STATE[self]
        if attr == "__name__":
            # The import system reads it to word "cannot import name X from Y".
            return state.name
        if attr in state.children:
            return state.children[attr]
        if attr not in state.names:
            raise AttributeError(f"module {state.name!r} has no attribute {attr!r} for templates")
        value = state.lookup(attr)
        if isinstance(value, types.ModuleType):
            raise AttributeError(f"{state.name}.{attr} is a module; import it explicitly")
        return value

    def __setattr__(self, attr: str, value: object) -> None:
        raise AttributeError(f"module {_VIEW_STATE[self].name!r} is read-only in templates")

    def __repr__(self) -> str:
        return f"<template view of module {_VIEW_STATE[self].name!r}>"


def _public_names(module: types.ModuleType) -> frozenset[str]:
    declared = getattr(module, "__all__", None)
    names = (
        set(declared)
        if declared is not None
        else {n for n in dir(module) if not isinstance(getattr(module, n), types.ModuleType)}
    )
    names = {n for n in names if not n.startswith("_")}
    return frozenset(names - _DENIED_NAMES.get(module.__name__, frozenset()))


def _real_view(dotted: str, children: Mapping[str, ModuleView] | None = None) -> ModuleView:
    module = importlib.import_module(dotted)
    return ModuleView(dotted, lambda attr: getattr(module, attr), _public_names(module), children)


def _karenina_view(dotted: str) -> ModuleView:
    prefix = dotted + "."
    children = {
        full[len(prefix) :]: _karenina_view(full)
        for full in KARENINA_ALIAS_MODULES
        if full.startswith(prefix) and "." not in full[len(prefix) :]
    }
    return ModuleView(dotted, KARENINA_NAMES.__getitem__, frozenset(KARENINA_NAMES), children)


# Packages whose template-facing modules are views over the template names.
_ALIAS_ROOTS = frozenset({"karenina", "verifleet"})

_views: dict[str, ModuleView] = {}
_views_lock = threading.Lock()


def _view(dotted: str) -> ModuleView:
    """The (cached) view for an allowed dotted module name."""
    view = _views.get(dotted)
    if view is not None:
        return view
    with _views_lock:
        if dotted not in _views:
            if dotted.split(".", 1)[0] in _ALIAS_ROOTS:
                _views[dotted] = _karenina_view(dotted)
            elif dotted == "collections":
                _views[dotted] = _real_view(dotted, {"abc": _view_unlocked("collections.abc")})
            else:
                _views[dotted] = _view_unlocked(dotted)
        return _views[dotted]


def _view_unlocked(dotted: str) -> ModuleView:
    view = _views.get(dotted)
    if view is None:
        view = _views[dotted] = _real_view(dotted)
    return view


def safe_import(
    name: str,
    globals: Mapping[str, object] | None = None,
    locals: Mapping[str, object] | None = None,
    fromlist: object = (),
    level: int = 0,
) -> ModuleView:
    """``__import__`` for templates: views of allowed modules only.

    Raises:
        ImportError: Relative imports, and any module outside the allowed set.
    """
    if level:
        raise ImportError("relative imports are not allowed in templates")
    if name.split(".", 1)[0] in _ALIAS_ROOTS:
        if name not in KARENINA_ALIAS_MODULES:
            raise ImportError(
                f"{name!r} is not provided to templates; use verifleet.templates or "
                "karenina.schemas.entities "
                "(BaseAnswer, VerifiedField, primitives, composition)"
            )
    elif not is_allowed_module(name):
        raise ImportError(f"import of {name!r} is not allowed in templates")
    if fromlist:
        return _view(name)
    return _view(name.split(".", 1)[0])


def _check_attribute(obj: object, attr: str) -> None:
    """Refuse dunders, frame introspection, and private names except on models.

    Private names stay usable on pydantic models (a template's own instances,
    ``getattr(self, "_cache")``); library objects keep their internals.

    Raises:
        AttributeError: The attribute is not available to templates.
    """
    if (
        is_dunder(attr)
        or attr in FORBIDDEN_ATTRIBUTES
        or (attr.startswith("_") and not isinstance(obj, pydantic.BaseModel))
    ):
        raise AttributeError(f"attribute {attr!r} is not available to templates")


def _safe_getattr(obj: object, attr: str, *default: object) -> object:
    _check_attribute(obj, attr)
    return getattr(obj, attr, *default)


def _safe_hasattr(obj: object, attr: str) -> bool:
    try:
        _check_attribute(obj, attr)
    except AttributeError:
        return False
    return hasattr(obj, attr)


def _safe_setattr(obj: object, attr: str, value: object) -> None:
    _check_attribute(obj, attr)
    setattr(obj, attr, value)


def _restricted_builtins() -> dict[str, object]:
    allowed = {name: getattr(builtins, name) for name in _SAFE_BUILTIN_NAMES}
    allowed.update(
        __build_class__=builtins.__build_class__,
        __import__=safe_import,
        getattr=_safe_getattr,
        hasattr=_safe_hasattr,
        setattr=_safe_setattr,
    )
    return allowed


def new_template_namespace(module_name: str) -> dict[str, object]:
    """A fresh module namespace for one template, registered in ``sys.modules``.

    Pre-binds the names the original framework's loader provided without an import
    (``BaseAnswer``, ``Field``, ``List``, ``Dict``, ``Optional``, ``Union``, ``Any``,
    ``Literal``), so templates that relied on that keep working.
    """
    module = types.ModuleType(module_name)
    namespace = module.__dict__
    namespace.update(
        __builtins__=_restricted_builtins(),
        BaseAnswer=KARENINA_NAMES["BaseAnswer"],
        VerifiedField=VerifiedField,
        Field=pydantic.Field,
        List=list,
        Dict=dict,
        Optional=typing.Optional,
        Union=typing.Union,
        Any=typing.Any,
        Literal=typing.Literal,
    )
    sys.modules[module_name] = module
    return namespace
