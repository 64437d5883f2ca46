"""Compile and validate answer-template source; inject question ids.

Stage 1 (ValidateTemplate) of the pipeline: the source must parse, pass the
sandbox's static checks, run, define exactly one answer class (the leaf
``BaseAnswer`` subclass it declares), have a meaningful ``verify()``, and a ground
truth that is a dict when it has one. The ground truth is checked by building a
probe instance with placeholder field values, as the pipeline will.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import threading
import types
import typing
from collections.abc import Iterator
from typing import Any, ClassVar, Literal, Union, get_args, get_origin

from pydantic import ValidationError

from verifleet.errors import TemplateValidationError

from .ast_guard import find_violation
from .base_answer import BaseAnswer
from .budget import (
    STEP_NAME,
    TEMPLATE_FILENAME_PREFIX,
    TemplateBudgetExceeded,
    instrument,
    step,
    step_budget,
)
from .sandbox import new_template_namespace

__all__ = [
    "COMPILE_LOCK",
    "NO_TEMPLATE_ID",
    "compile_answer_class",
    "compute_template_id",
    "inject_question_id",
    "probe_instance",
    "source_digest",
    "static_template_problem",
    "validate_answer_template",
]

#: Template id of a question without a template.
NO_TEMPLATE_ID = "no_template"

#: Serialises parsing and executing template source in this process. On Python
#: 3.11, parsing in many threads at once raises "SystemError: AST constructor
#: recursion depth mismatch" (CPython issue 106905).
COMPILE_LOCK = threading.RLock()

TEMPLATE_MODULE_PREFIX = "verifleet_template_"

#: Steps of template code (loop passes, calls) allowed while loading (module
#: body, ground truth): far more than any real template needs, little enough to
#: stop a runaway loop in well under a second.
LOADING_STEP_BUDGET = 200_000


def compute_template_id(source: str | None) -> str:
    """MD5 of the template source after normalising line endings (CRLF/CR to LF) and
    stripping trailing whitespace from every line and from the end.

    Returns ``"no_template"`` for None or blank source. Never raises.
    """
    if source is None or not source.strip():
        return NO_TEMPLATE_ID
    return _template_id(source)


# The same few sources are hashed for every unit of a benchmark (the reward
# server: every request); a source string caches its own hash, so a hit costs
# one comparison.
@functools.lru_cache(maxsize=1024)
def _template_id(source: str) -> str:
    text = source.replace("\r\n", "\n").replace("\r", "\n")
    normalised = "\n".join(line.rstrip() for line in text.split("\n")).rstrip()
    return hashlib.md5(normalised.encode("utf-8")).hexdigest()


def source_digest(source: str) -> str:
    """SHA-256 of the template source with line endings made LF (as Python reads
    it: the two forms compile to the same code): the key of whatever is compiled
    from, or said about, a source, where two different templates must never share
    an entry.

    The template id (:func:`compute_template_id`) names a template in results;
    it is MD5 and strips trailing whitespace, so two sources made to collide under
    it, or differing only in trailing whitespace inside a string literal, would
    otherwise share a compiled class or a description.
    """
    text = source.replace("\r\n", "\n").replace("\r", "\n")
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _fail(problem: str, question_id: str | None) -> TemplateValidationError:
    return TemplateValidationError(problem, question_id=question_id)


def _field_types(model: type[BaseAnswer]) -> Iterator[object]:
    """Every type mentioned in ``model``'s field annotations, unwrapping generics."""
    pending = [info.annotation for info in model.model_fields.values()]
    while pending:
        annotation = pending.pop()
        yield annotation
        pending.extend(get_args(annotation))


def _answer_class(
    namespace: dict[str, object], module_name: str, qid: str | None
) -> type[BaseAnswer]:
    defined = [
        value
        for value in namespace.values()
        if isinstance(value, type)
        and issubclass(value, BaseAnswer)
        and value is not BaseAnswer
        and value.__module__ == module_name
    ]
    leaves = [c for c in defined if not any(o is not c and issubclass(o, c) for o in defined)]
    if len(leaves) > 1:
        # A BaseAnswer subclass used as a field type of another (a nested
        # "Citation" model) is part of the answer, not a second answer class.
        nested = {id(t) for c in leaves for t in _field_types(c)}
        leaves = [c for c in leaves if id(c) not in nested]
    if not leaves:
        raise _fail("template defines no answer class (a subclass of BaseAnswer)", qid)
    if len(leaves) > 1:
        names = ", ".join(sorted(c.__name__ for c in leaves))
        raise _fail(f"template defines more than one answer class ({names}); keep one", qid)
    return leaves[0]


def compile_answer_class(source: str, *, question_id: str | None = None) -> type[BaseAnswer]:
    """Parse, check and run ``source``; return its answer class (not yet validated).

    Raises:
        TemplateValidationError: Syntax error (with line), a forbidden construct,
            an exception while the module body runs, or not exactly one answer class.
    """
    if source is None or not source.strip():
        raise _fail("template source is empty", question_id)
    template_id = compute_template_id(source)
    # Named by the exact source, not the (MD5) template id: two sources that
    # collide under it must not resolve names through each other's module.
    module_name = f"{TEMPLATE_MODULE_PREFIX}{source_digest(source)}"
    with COMPILE_LOCK:
        tree = _checked_tree(source, template_id, question_id)
        code = compile(instrument(tree), f"{TEMPLATE_FILENAME_PREFIX}{template_id}>", "exec")
        namespace = new_template_namespace(module_name)
        namespace[STEP_NAME] = step
        try:
            with step_budget(LOADING_STEP_BUDGET):
                exec(code, namespace)
        except TemplateBudgetExceeded as exc:
            raise _fail(str(exc), question_id) from None
        except ImportError as exc:
            raise _fail(f"template import refused: {exc}", question_id) from None
        except Exception as exc:
            raise _fail(
                f"template raised {type(exc).__name__} while loading: {exc}", question_id
            ) from None
        answer_cls = _answer_class(namespace, module_name, question_id)
        _complete(answer_cls, namespace, question_id)
    answer_cls.template_source = source
    return answer_cls


def _checked_tree(source: str, template_id: str, question_id: str | None) -> ast.Module:
    """``source`` parsed and passed by the static guard (the caller holds
    ``COMPILE_LOCK``).

    Raises:
        TemplateValidationError: A syntax error (with its line) or a forbidden
            construct (named, with its line).
    """
    try:
        tree = ast.parse(source, filename=f"{TEMPLATE_FILENAME_PREFIX}{template_id}>")
    except SyntaxError as exc:
        raise _fail(
            f"template does not compile: {exc.msg} (line {exc.lineno})", question_id
        ) from None
    violation = find_violation(tree)
    if violation is not None:
        problem, line = violation
        raise _fail(f"template {problem} (line {line})", question_id)
    return tree


def static_template_problem(source: str | None) -> str | None:
    """What the static checks alone find wrong with ``source`` (it is empty,
    does not parse, or uses a construct the guard refuses), in the words
    :func:`compile_answer_class` uses for it; None when they find nothing.
    Nothing of the template runs: a template that passes can still fail to
    compile (its class body raising, no answer class, no ``verify()``...).

    Raises:
        RecursionError, MemoryError: The source is nested or large beyond
            what the parser takes (a caller running untrusted source runs it
            where that is contained: the sandbox's executors).
    """
    if source is None or not source.strip():
        return "template source is empty"
    with COMPILE_LOCK:
        try:
            _checked_tree(source, compute_template_id(source), None)
        except TemplateValidationError as exc:
            return exc.problem
    return None


def _complete(answer_cls: type[BaseAnswer], namespace: dict[str, object], qid: str | None) -> None:
    """Resolve annotations that name things defined later in the template.

    An incomplete class would be completed later in some other module's namespace
    (e.g. when a question id is injected), where string annotations would be
    evaluated with the real builtins; so it is resolved here, in the template's
    own restricted namespace, or refused.
    """
    if answer_cls.__pydantic_complete__:
        return
    try:
        answer_cls.model_rebuild(raise_errors=True, _types_namespace=namespace)
    except Exception as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _fail(
            f"answer class {answer_cls.__name__} has type annotations that cannot be "
            f"resolved: {first_line}",
            qid,
        ) from None


def _placeholder(annotation: object) -> object:
    """A value of roughly the right type, for a probe instance."""
    origin = get_origin(annotation)
    if origin is Literal:
        return get_args(annotation)[0]
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        return _placeholder(args[0]) if len(args) == len(get_args(annotation)) else None
    if origin is typing.Annotated:
        return _placeholder(get_args(annotation)[0])
    target = origin or annotation
    simple: dict[object, object] = {str: "", int: 0, float: 0.0, bool: False, bytes: b""}
    if target in simple:
        return simple[target]
    for container, empty in ((list, list), (dict, dict), (set, set), (tuple, tuple)):
        if isinstance(target, type) and issubclass(target, container):
            return empty()
    return None


def probe_instance(answer_cls: type[BaseAnswer]) -> BaseAnswer:
    """An instance built without validation (placeholder values for required
    fields), with ``model_post_init`` run, so its ground truth can be read.

    Raises:
        Exception: Whatever the template's ``model_post_init``/``ground_truth()``
            raises.
    """
    values: dict[str, Any] = {
        name: _placeholder(info.annotation)
        for name, info in answer_cls.model_fields.items()
        if info.is_required()
    }
    return answer_cls.model_construct(**values)


def validate_answer_template(source: str, *, question_id: str | None = None) -> type[BaseAnswer]:
    """Compile ``source`` and check it is a usable answer template.

    Args:
        source: The template's Python source.
        question_id: Named in error messages.

    Returns:
        The answer class (without question id; see :func:`inject_question_id`).

    Raises:
        TemplateValidationError: The source does not compile (message has the line),
            uses something the sandbox refuses (``os``, ``open``, ``__import__``,
            dunder attributes...), fails while loading, defines no or several answer
            classes, has no ``verify()``, or its ground truth is not a dict.
    """
    answer_cls = compile_answer_class(source, question_id=question_id)
    name = answer_cls.__name__
    if not answer_cls.defines_verify():
        raise _fail(f"answer class {name} has no verify() method", question_id)
    try:
        with step_budget(LOADING_STEP_BUDGET):
            ground_truth = probe_instance(answer_cls).get_ground_truth()
    except TemplateBudgetExceeded as exc:
        raise _fail(f"setting the ground truth of {name}: {exc}", question_id) from None
    except ValidationError as exc:
        raise _fail(f"setting the ground truth of {name} failed: {exc}", question_id) from None
    except Exception as exc:
        raise _fail(
            f"setting the ground truth of {name} raised {type(exc).__name__}: {exc}", question_id
        ) from None
    if ground_truth is not None and not isinstance(ground_truth, dict):
        raise _fail(
            f"ground truth of {name} must be a dict (self.correct = {{...}}), "
            f"got {type(ground_truth).__name__}",
            question_id,
        )
    return answer_cls


def inject_question_id(answer_cls: type[BaseAnswer], question_id: str) -> type[BaseAnswer]:
    """A subclass of ``answer_cls`` whose instances carry ``id == question_id``.

    The subclass keeps the class name, module and source; ``raw_answer_class`` on it
    points back at ``answer_cls``.
    """

    class _Bound(answer_cls):  # type: ignore[valid-type,misc]
        bound_question_id: ClassVar[str | None] = question_id
        raw_answer_class: ClassVar[type[BaseAnswer] | None] = answer_cls

        def model_post_init(self, context: object, /) -> None:
            super().model_post_init(context)
            self.id = question_id

    _Bound.__name__ = answer_cls.__name__
    _Bound.__qualname__ = answer_cls.__qualname__
    _Bound.__module__ = answer_cls.__module__
    return _Bound
