"""Executor side: what each request does with template and trait code.

Runs only in an executor's template processes and their per-call children
(``_children``), never in the process that reads the host's requests. Every
result is a protocol model of JSON-safe data; template objects never leave the
process.
"""

from __future__ import annotations

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
    build_answer,
    judge_field_names,
    judge_json_schema,
    parsed_ground_truth,
    parsed_llm_fields,
    static_template_problem,
    validate_answer_template,
)

from ._errors import SandboxError
from ._protocol import (
    CheckTraitRequest,
    DescribeRequest,
    DescribeResult,
    ErrorKind,
    EvaluateRequest,
    EvaluateResult,
    RegexTraitRequest,
    StaticCheckRequest,
    StaticCheckResult,
    TraitRequest,
    TraitResult,
    Verification,
)

__all__ = [
    "RequestError",
    "check_trait",
    "compile_template",
    "describe",
    "evaluate",
    "regex_trait",
    "static_check",
    "trait",
]


class RequestError(SandboxError):
    """A request failed in a way the host reports as ``kind`` (no traceback crosses).

    Raised and caught inside the executor only; the host sees ``kind`` and
    ``message`` as JSON."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
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


def compile_template(source: str, question_id: str) -> type[BaseAnswer]:
    """The template's compiled class (its class body runs here). Not bound to the
    question: answers get their question id when built (:func:`build_answer`).

    Raises:
        RequestError: ``template`` (invalid template).
    """
    try:
        return validate_answer_template(source)
    except TemplateValidationError as exc:
        raise RequestError("template", exc.problem) from None


def describe(cls: type[BaseAnswer], request: DescribeRequest) -> DescribeResult:
    """Describe the validated template.

    Raises:
        RequestError: ``template`` (reading its ground truth failed).
    """
    try:
        ground_truth = parsed_ground_truth(cls)
    except Exception as exc:  # a validated template does not; be safe anyway
        problem = f"reading the ground truth raised {_describe(exc)}"
        raise RequestError("template", problem) from None
    return DescribeResult(
        class_name=cls.__name__,
        judge_schema=judge_json_schema(cls),
        judge_fields=judge_field_names(cls),
        ground_truth=ground_truth,
        composition_strategy=cls.composition_strategy(),
        defines_granular=cls.defines_granular(),
    )


def evaluate(cls: type[BaseAnswer], request: EvaluateRequest) -> EvaluateResult:
    """Build the answer from the judge's output, then run its verification.

    A judge output that does not fit is ``invalid``; exceptions of ``verify()``,
    ``field_results()`` and ``verify_granular()`` are recorded, not raised.
    """
    try:
        answer = build_answer(cls, request.data, question_id=request.question_id)
    except ValidationError as exc:
        return EvaluateResult(invalid=_first_errors(exc))
    answer.set_raw_trace(request.raw_trace)
    parsed = _jsonable(parsed_llm_fields(answer))
    strategy = cls.composition_strategy()
    field_ok, error = False, None
    try:
        field_ok = bool(answer.verify())
    except Exception as exc:  # template code: any failure is the template's verdict
        error = _describe(exc)
    field_results: dict[str, bool] | None = None
    field_results_error = None
    try:
        results = answer.field_results()
        if results is not None:
            field_results = {str(k): bool(v) for k, v in results.items()}
    except Exception as exc:
        field_results_error = str(exc)
    try:
        regex = answer.verify_regex(request.raw_trace)
    except Exception as exc:  # the stage fails on it, as it did in-process
        verification = Verification(
            composition_strategy=strategy,
            field_ok=field_ok,
            error=error,
            field_results=field_results,
            field_results_error=field_results_error,
            regex_error=_describe(exc),
        )
        return EvaluateResult(parsed=parsed, verification=verification)
    granular, granular_error = None, None
    if error is None and cls.defines_granular():
        try:
            granular = _jsonable(answer.verify_granular())
        except Exception as exc:
            granular_error = str(exc)
    verification = Verification(
        composition_strategy=strategy,
        field_ok=field_ok,
        error=error,
        field_results=field_results,
        field_results_error=field_results_error,
        regex=regex.model_dump(mode="json"),
        granular=granular,
        granular_error=granular_error,
    )
    return EvaluateResult(parsed=parsed, verification=verification)


def static_check(request: StaticCheckRequest) -> StaticCheckResult:
    """The static checks (parse and guard) of each source, in order; nothing
    of any template runs. A source the parser cannot take (nested or large
    beyond its limits) gets the words a compile of it gets from the host."""
    problems: list[str | None] = []
    for source in request.sources:
        try:
            problems.append(static_template_problem(source))
        except (MemoryError, RecursionError) as exc:
            # As SandboxPool words a ``crash`` reply to compiling it.
            problem = f"compiling the template: {type(exc).__name__}"
            problems.append(f"template code exhausted the sandbox: {problem}")
    return StaticCheckResult(problems=problems)


def check_trait(request: CheckTraitRequest) -> TraitResult:
    """Load (compile or, when trusted, unpickle) one callable trait.

    Raises:
        RequestError: ``untrusted`` or ``trait``, as :func:`trait`.
    """
    try:
        CallableTrait.model_validate(request.trait).load_function()
    except UntrustedCodeError as exc:
        raise RequestError("untrusted", str(exc)) from None
    except RubricError as exc:
        raise RequestError("trait", str(exc)) from None
    except Exception as exc:
        raise RequestError("trait", _describe(exc)) from None
    return TraitResult(value=True)


def regex_trait(request: RegexTraitRequest) -> TraitResult:
    """Search a text with one regex trait (a pattern can backtrack for ever: it
    runs in a child under the wall-clock limit, never in a worker thread).

    Raises:
        RequestError: ``trait`` (the trait is malformed).
    """
    try:
        found = RegexTrait.model_validate(request.trait).evaluate(request.text)
    except Exception as exc:
        raise RequestError("trait", _describe(exc)) from None
    return TraitResult(value=found)


def trait(request: TraitRequest) -> TraitResult:
    """Run one callable trait on a text.

    Raises:
        RequestError: ``untrusted`` (pickled code without trust) or ``trait``
            (refused, does not load, raises, or returns a bad value).
    """
    try:
        value = CallableTrait.model_validate(request.trait).evaluate(request.text)
    except UntrustedCodeError as exc:
        raise RequestError("untrusted", str(exc)) from None
    except RubricError as exc:
        raise RequestError("trait", str(exc)) from None
    except Exception as exc:
        raise RequestError("trait", _describe(exc)) from None
    return TraitResult(value=value)
