"""The verifleet exception hierarchy.

Every error verifleet raises on purpose derives from :class:`VerifleetError`, so a
caller can catch one type. Content problems of a single question (a broken
template, a judge that returns garbage) never escape the pipeline: they are
recorded in that question's result. These exceptions are for problems a caller
must act on: a benchmark that cannot be loaded, a configuration that is invalid,
code that is refused because it is not trusted.
"""

from __future__ import annotations

__all__ = [
    "BenchmarkLoadError",
    "ConfigError",
    "ExportError",
    "RubricError",
    "TemplateValidationError",
    "UntrustedCodeError",
    "VerifleetError",
]


class VerifleetError(Exception):
    """Base class of every error verifleet raises deliberately."""


class ConfigError(VerifleetError, ValueError):
    """A verification or model configuration is invalid.

    The message names the offending field, e.g. ``parsing_models[0].model_name``.
    """


class TemplateValidationError(VerifleetError, ValueError):
    """An answer template cannot be used.

    Raised when the source does not compile, defines no (or more than one) answer
    class, lacks ``verify()``, has a ground truth that is not a dict, or touches
    something the template sandbox refuses (``os``, files, processes).

    Attributes:
        question_id: The question whose template failed, when known.
        problem: The problem without the question prefix.
    """

    def __init__(self, problem: str, *, question_id: str | None = None) -> None:
        self.problem = problem
        self.question_id = question_id
        prefix = f"question {question_id}: " if question_id else ""
        super().__init__(f"{prefix}{problem}")


class RubricError(VerifleetError, ValueError):
    """A rubric or rubric trait is invalid (e.g. a name clash between global and
    question-specific rubrics, or a literal trait without classes)."""


class UntrustedCodeError(VerifleetError):
    """Loading would run untrusted code (a pickled callable trait) and the caller
    did not pass the explicit trust option."""


class BenchmarkLoadError(VerifleetError, ValueError):
    """A benchmark file or checkpoint cannot be loaded.

    Attributes:
        path: The file that failed.
        question_id: The question at fault, when the problem is inside one.
        problem: What is wrong.
    """

    def __init__(
        self, problem: str, *, path: str | None = None, question_id: str | None = None
    ) -> None:
        self.problem = problem
        self.path = path
        self.question_id = question_id
        where = path or "<benchmark>"
        if question_id:
            where += f", question {question_id}"
        super().__init__(f"{where}: {problem}")


class ExportError(VerifleetError):
    """A result export or import failed (unknown format, unreadable or
    incompatible file)."""
