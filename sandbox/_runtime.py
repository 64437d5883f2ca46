"""Executor side: what each request does with template and trait code.

Runs only inside an executor process. Every answer is JSON-safe data (plain
dicts, lists, strings, numbers); template objects never leave the process.
Compiled classes are cached per executor (the schemas' :class:`TemplateCache`,
keyed by template id); sources are kept by template id so the host sends each
source once per executor.
"""

from __future__ import annotations

import resource
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from verifleet.schemas import (
    CallableTrait,
    RegexTrait,
    RubricError,
    TemplateValidationError,
    UntrustedCodeError,
)
from verifleet.templates import (
    BaseAnswer,
    TemplateCache,
    build_answer,
    judge_field_names,
    judge_json_schema,
    parsed_ground_truth,
    parsed_llm_fields,
)

from ._errors import SandboxError

__all__ = ["RequestError", "Runtime"]


class RequestError(SandboxError):
    """A request failed in a way the host reports as ``kind`` (no traceback crosses).

    Raised and caught inside the executor only; the host sees ``kind`` and
    ``message`` as JSON."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _jsonable(value: Any) -> Any:
    return to_jsonable_python(value, fallback=repr)


def _first_errors(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "answer"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class Runtime:
    """Request handlers of one executor (single-threaded)."""

    def __init__(self, max_templates: int = 1024) -> None:
        self._templates = TemplateCache(max_templates=max_templates, max_bound=1)
        self._sources: OrderedDict[str, str] = OrderedDict()
        self._max_templates = max_templates
        self.handlers: dict[str, Callable[[Mapping[str, Any]], Any]] = {
            "ping": self.ping,
            "describe": self.describe,
            "evaluate": self.evaluate,
            "trait": self.trait,
            "check_trait": self.check_trait,
            "regex_trait": self.regex_trait,
        }

    def ping(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Liveness: answers at once, with this executor's CPU seconds so far."""
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {"pong": True, "cpu_seconds": usage.ru_utime + usage.ru_stime}

    def _source(self, request: Mapping[str, Any]) -> str:
        template_id = str(request["template_id"])
        source = request.get("source")
        if isinstance(source, str):
            self._sources[template_id] = source
            self._sources.move_to_end(template_id)
            while len(self._sources) > self._max_templates:
                self._sources.popitem(last=False)
            return source
        known = self._sources.get(template_id)
        if known is None:
            raise RequestError("need_source", f"template {template_id} is not loaded here")
        self._sources.move_to_end(template_id)
        return known

    def _answer_class(self, request: Mapping[str, Any]) -> type[BaseAnswer]:
        """The template's compiled class. Not bound to the question: answers get
        their question id when built (:func:`build_answer`), so a question new to
        this executor costs no class of its own, only a new template does."""
        source = self._source(request)
        try:
            return self._templates.raw_class(source, question_id=str(request["question_id"]))
        except TemplateValidationError as exc:
            raise RequestError("template", exc.problem) from None

    def describe(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Validate the template and describe it (for the question in ``request``).

        Raises:
            RequestError: ``template`` (invalid template), ``need_source``.
        """
        cls = self._answer_class(request)
        try:
            ground_truth = parsed_ground_truth(cls)
        except Exception as exc:  # a validated template does not; be safe anyway
            problem = f"reading the ground truth raised {_describe(exc)}"
            raise RequestError("template", problem) from None
        return {
            "class_name": cls.__name__,
            "judge_schema": judge_json_schema(cls),
            "judge_fields": judge_field_names(cls),
            "ground_truth": ground_truth,
            "composition_strategy": cls.composition_strategy(),
            "defines_granular": cls.defines_granular(),
        }

    def evaluate(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Build the answer from the judge's output, then run its verification.

        Mirrors what ParseTemplate and VerifyTemplate did in-process: a judge
        output that does not fit is ``{"invalid": "<first errors>"}``; exceptions
        of ``verify()``, ``field_results()`` and ``verify_granular()`` are
        recorded, not raised.

        Raises:
            RequestError: ``template`` or ``need_source``.
        """
        cls = self._answer_class(request)
        data = request.get("data") or {}
        if not isinstance(data, dict):
            raise RequestError("protocol", "data must be an object")
        try:
            answer = build_answer(cls, data, question_id=str(request["question_id"]))
        except ValidationError as exc:
            return {"invalid": _first_errors(exc)}
        answer.set_raw_trace(str(request.get("raw_trace") or ""))
        parsed = parsed_llm_fields(answer)
        verification: dict[str, Any] = {
            "composition_strategy": cls.composition_strategy(),
            "field_ok": False,
            "error": None,
            "field_results": None,
            "field_results_error": None,
            "granular": None,
            "granular_error": None,
        }
        try:
            verification["field_ok"] = bool(answer.verify())
        except Exception as exc:  # template code: any failure is the template's verdict
            verification["error"] = _describe(exc)
        try:
            results = answer.field_results()
            verification["field_results"] = (
                {str(k): bool(v) for k, v in results.items()} if results is not None else None
            )
        except Exception as exc:
            verification["field_results_error"] = str(exc)
        try:
            regex = answer.verify_regex(str(request.get("raw_trace") or ""))
        except Exception as exc:  # the stage fails on it, as it did in-process
            verification["regex"] = None
            verification["regex_error"] = _describe(exc)
            return {"parsed": parsed, "verification": verification}
        verification["regex"] = regex.model_dump(mode="json")
        verification["regex_error"] = None
        if verification["error"] is None and cls.defines_granular():
            try:
                verification["granular"] = _jsonable(answer.verify_granular())
            except Exception as exc:
                verification["granular_error"] = str(exc)
        return {"parsed": parsed, "verification": verification}

    def check_trait(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Load (compile or, when trusted, unpickle) one callable trait.

        Raises:
            RequestError: ``untrusted`` or ``trait``, as :meth:`trait`.
        """
        try:
            CallableTrait.model_validate(request["trait"]).load_function()
        except UntrustedCodeError as exc:
            raise RequestError("untrusted", str(exc)) from None
        except RubricError as exc:
            raise RequestError("trait", str(exc)) from None
        except Exception as exc:
            raise RequestError("trait", _describe(exc)) from None
        return {"loaded": True}

    def regex_trait(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Search a text with one regex trait (a pattern can backtrack for ever: it
        runs here, under the wall-clock limit, not in a worker thread).

        Raises:
            RequestError: ``trait`` (the trait is malformed).
        """
        try:
            trait = RegexTrait.model_validate(request["trait"])
            return {"value": trait.evaluate(str(request.get("text") or ""))}
        except Exception as exc:
            raise RequestError("trait", _describe(exc)) from None

    def trait(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Run one callable trait on a text.

        Raises:
            RequestError: ``untrusted`` (pickled code without trust) or ``trait``
                (refused, does not load, raises, or returns a bad value).
        """
        try:
            trait = CallableTrait.model_validate(request["trait"])
            value = trait.evaluate(str(request.get("text") or ""))
        except UntrustedCodeError as exc:
            raise RequestError("untrusted", str(exc)) from None
        except RubricError as exc:
            raise RequestError("trait", str(exc)) from None
        except Exception as exc:
            raise RequestError("trait", _describe(exc)) from None
        return {"value": value}
