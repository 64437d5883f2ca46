"""Callable rubric traits: a Python function scores the answer text.

Two ways to carry the function:

* ``callable_code``: the original framework's base64 cloudpickle blob. Unpickling
  runs arbitrary code, so it happens only when the trait is ``trusted`` (the
  benchmark loader sets that only when the user passes ``trust_callables=True``).
* ``callable_source``: the source of one ``def`` (verifleet's own format, and what
  the original's fixture checkpoints store base64-encoded under ``callable_code``;
  the checkpoint loader decodes those to source). It runs
  in a restricted namespace: a small set of builtins, imports limited to
  :data:`ALLOWED_IMPORTS`, and no dunder names or attributes (the usual way out of
  such a namespace). That keeps honest mistakes and casual misuse out; it is not
  a sandbox against a determined attacker, so only run benchmarks you accept.

A trait with neither (a checkpoint that stored no code: the original loads such a
trait with empty code) loads, and fails when evaluated, like the original's.

Compiled functions are cached per process by a hash of their code, under a lock
(parsing in many threads at once trips CPython issue 106905).
"""

from __future__ import annotations

import ast
import base64
import binascii
import builtins
import hashlib
import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, cast

import cloudpickle
from pydantic import Field, field_validator, model_validator

from .._errors import RubricError, UntrustedCodeError
from ._traits import TraitKind, _check_classes, _split_classes, _TraitBase

__all__ = ["ALLOWED_IMPORTS", "CallableTrait"]

ALLOWED_IMPORTS = frozenset(
    {
        "collections",
        "datetime",
        "difflib",
        "functools",
        "itertools",
        "json",
        "math",
        "re",
        "statistics",
        "string",
        "textwrap",
        "unicodedata",
    }
)

_SAFE_BUILTINS = (
    "abs",
    "all",
    "any",
    "bool",
    "dict",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "frozenset",
    "int",
    "isinstance",
    "len",
    "list",
    "map",
    "max",
    "min",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "sorted",
    "str",
    "sum",
    "tuple",
    "zip",
    "ValueError",
    "TypeError",
    "KeyError",
    "IndexError",
    "Exception",
)

TraitFunction = Callable[[str], object]

_cache: dict[str, TraitFunction] = {}
_cache_lock = threading.Lock()


def _restricted_import(
    name: str,
    globals_: Mapping[str, object] | None = None,
    locals_: Mapping[str, object] | None = None,
    fromlist: Sequence[str] = (),
    level: int = 0,
) -> object:
    if level != 0 or name.split(".")[0] not in ALLOWED_IMPORTS:
        raise ImportError(f"import of {name!r} is not allowed in a callable trait")
    return __import__(name, globals_, locals_, fromlist, level)


def _check_tree(tree: ast.Module) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for module in modules:
                if isinstance(node, ast.ImportFrom) and node.level:
                    raise ValueError("relative imports are not allowed")
                if module.split(".")[0] not in ALLOWED_IMPORTS:
                    raise ValueError(
                        f"import of {module!r} is not allowed (allowed: {sorted(ALLOWED_IMPORTS)})"
                    )
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
        if isinstance(name, str) and name.startswith("__"):
            raise ValueError(f"dunder name {name!r} is not allowed")


def _compile_source(source: str) -> TraitFunction:
    tree = ast.parse(source, mode="exec")
    _check_tree(tree)
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    if "evaluate" in functions:
        chosen = "evaluate"
    elif len(functions) == 1:
        chosen = functions[0]
    else:
        raise ValueError("define exactly one function, or one named 'evaluate'")
    safe = {name: getattr(builtins, name) for name in _SAFE_BUILTINS}
    safe["__import__"] = _restricted_import
    namespace: dict[str, object] = {"__builtins__": safe, "__name__": "verifleet_callable_trait"}
    exec(compile(tree, "<callable trait>", "exec"), namespace)
    # The parsed tree defines `chosen` as a function, and exec just bound it.
    func = cast(TraitFunction, namespace[chosen])
    return func


def _unpickle(blob: str) -> TraitFunction:
    func = cloudpickle.loads(base64.b64decode(blob))
    if not callable(func):
        raise ValueError(f"the pickled object is a {type(func).__name__}, not a function")
    return func


def _load_cached(key: str, build: Callable[[], TraitFunction]) -> TraitFunction:
    with _cache_lock:
        func = _cache.get(key)
        if func is None:
            func = build()
            _cache[key] = func
        return func


class CallableTrait(_TraitBase):
    """A trait scored by a Python function ``f(text) -> bool | int | str``.

    Kinds, checked as the original framework checks them: ``boolean`` (must return
    bool; ``invert_result`` flips it), ``score`` (int or float within
    [min_score, max_score] when given, kept as returned: 3.7 stays 3.7) and
    ``literal`` (must return one of ``classes`` by its exact name; the result is
    its index). At most one of ``callable_code`` (pickled, needs ``trusted``) and
    ``callable_source`` (restricted ``def``) is set; with neither the trait loads
    and every evaluation fails (see :attr:`has_code`).
    """

    trait_type: Literal["callable"] = "callable"
    kind: TraitKind = "boolean"
    callable_code: str | None = None
    callable_source: str | None = None
    min_score: int | None = None
    max_score: int | None = None
    classes: list[str] | None = None
    class_descriptions: dict[str, str] | None = None
    invert_result: bool = False
    higher_is_better: bool = True
    trusted: bool = Field(
        default=False,
        description="May callable_code be unpickled? Set by the loader from trust_callables.",
    )

    @model_validator(mode="before")
    @classmethod
    def _accept_class_mapping(cls, data: object) -> object:
        return _split_classes(data)

    @field_validator("callable_code", mode="before")
    @classmethod
    def _base64_text(cls, value: object) -> object:
        if isinstance(value, bytes):
            return base64.b64encode(value).decode("ascii")
        if isinstance(value, str):
            try:
                base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raise ValueError("callable_code is not valid base64") from None
        return value

    @field_validator("classes")
    @classmethod
    def _valid_classes(cls, value: list[str] | None) -> list[str] | None:
        return _check_classes(value)

    @model_validator(mode="after")
    def _one_code_and_kind(self) -> CallableTrait:
        if self.callable_code is not None and self.callable_source is not None:
            raise ValueError(
                f"callable trait {self.name!r} needs at most one of callable_code "
                "(pickled) and callable_source (a def)"
            )
        if self.kind == "literal":
            if not self.classes:
                raise ValueError(f"literal callable trait {self.name!r} needs classes")
            self.min_score, self.max_score = 0, len(self.classes) - 1
        elif self.kind == "boolean":
            self.min_score = self.max_score = None
        elif (
            self.min_score is not None
            and self.max_score is not None
            and self.min_score >= self.max_score
        ):
            raise ValueError(
                f"callable trait {self.name!r}: min_score {self.min_score} must be "
                f"below max_score {self.max_score}"
            )
        return self

    @property
    def has_code(self) -> bool:
        """Whether the trait carries a function at all (checkpoints may store none)."""
        return self.callable_code is not None or self.callable_source is not None

    @property
    def is_pickled(self) -> bool:
        """Whether the function is a pickled blob (running it needs trust)."""
        return self.callable_code is not None

    @classmethod
    def from_callable(
        cls, name: str, func: TraitFunction, *, kind: TraitKind = "boolean", **fields: object
    ) -> CallableTrait:
        """Pickle ``func`` (cloudpickle) into a trusted trait: the caller handed us
        the function, so running it again is no new risk.

        Raises:
            RubricError: ``func`` does not take exactly one argument.
        """
        if len(inspect.signature(func).parameters) != 1:
            raise RubricError(f"callable trait {name!r}: the function must take one argument")
        blob = base64.b64encode(cloudpickle.dumps(func)).decode("ascii")
        return cls(name=name, kind=kind, callable_code=blob, trusted=True, **fields)

    def load_function(self) -> TraitFunction:
        """The trait's function, compiled or unpickled once per process.

        Raises:
            UntrustedCodeError: pickled code on a trait that is not ``trusted``.
            RubricError: the trait has no code, the source is refused or does not
                compile, or the blob does not unpickle to a function.
        """
        if not self.has_code:
            raise RubricError(
                f"callable trait {self.name!r} has no code (its checkpoint stored none)"
            )
        if self.callable_code is not None:
            if not self.trusted:
                raise UntrustedCodeError(
                    f"callable trait {self.name!r} holds pickled code, which runs arbitrary "
                    "code when loaded; load the benchmark with trust_callables=True "
                    "(CLI: --trust-callables) if you trust its author"
                )
            blob = self.callable_code
            key = "pickle:" + hashlib.sha256(blob.encode("ascii")).hexdigest()
            build: Callable[[], TraitFunction] = lambda: _unpickle(blob)  # noqa: E731
        else:
            assert self.callable_source is not None
            source = self.callable_source
            key = "source:" + hashlib.sha256(source.encode("utf-8")).hexdigest()
            build = lambda: _compile_source(source)  # noqa: E731
        try:
            return _load_cached(key, build)
        except UntrustedCodeError:
            raise
        except Exception as exc:  # any failure of foreign code is the trait's problem
            raise RubricError(
                f"callable trait {self.name!r} cannot be loaded: {type(exc).__name__}: {exc}"
            ) from exc

    def evaluate(self, text: str) -> bool | int | float:
        """Run the function on ``text`` and check the result against the kind.

        Returns:
            bool for boolean traits (inverted when asked), the int or float score
            for score traits, the class index for literal traits.

        Raises:
            UntrustedCodeError: see :meth:`load_function`.
            RubricError: the function raises, or returns a value of the wrong type
                or out of range; the message names the trait.
        """
        func = self.load_function()
        try:
            value = func(text)
        except Exception as exc:  # user code may raise anything; report it as the trait's
            raise RubricError(
                f"callable trait {self.name!r} raised {type(exc).__name__}: {exc}"
            ) from exc
        return self._check_result(value)

    def _check_result(self, value: object) -> bool | int | float:
        if self.kind == "boolean":
            if not isinstance(value, bool):
                raise RubricError(
                    f"callable trait {self.name!r} (boolean) returned {type(value).__name__}"
                )
            return not value if self.invert_result else value
        if self.kind == "literal":
            # The original accepts only a class name, matched exactly.
            if not isinstance(value, str):
                raise RubricError(
                    f"callable trait {self.name!r} (literal) must return a class name, "
                    f"returned {type(value).__name__}"
                )
            if value not in (self.classes or []):
                raise RubricError(
                    f"callable trait {self.name!r} returned {value!r}, not one of its "
                    f"classes {self.classes}"
                )
            return (self.classes or []).index(value)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RubricError(
                f"callable trait {self.name!r} (score) returned {type(value).__name__}"
            )
        low, high = self.min_score, self.max_score
        if (low is not None and value < low) or (high is not None and value > high):
            raise RubricError(
                f"callable trait {self.name!r} returned {value}, outside [{low}, {high}]"
            )
        return value
