"""Where benchmark checks run template and callable-trait code.

Checking a benchmark (:meth:`Benchmark.validate`, :func:`load_benchmark`) has to
compile its templates and load its callable traits, which runs their authors'
code. The checker that does it is passed explicitly; without one, the sandbox's
checker is used (looked up by module name, so the data model keeps no import of
the sandbox and nothing depends on what was imported first). Running author code
in the calling process takes :data:`IN_PROCESS_CHECKER`, named, never a default.
"""

from __future__ import annotations

import importlib
from typing import Protocol, runtime_checkable

from verifleet.templates import validate_answer_template

from ._rubric import CallableTrait

__all__ = ["IN_PROCESS_CHECKER", "CodeChecker", "resolve_checker"]

#: The module whose ``sandbox_checker()`` is the default checker.
DEFAULT_CHECKER_MODULE = "verifleet.sandbox"


@runtime_checkable
class CodeChecker(Protocol):
    """Runs the code a benchmark check needs to run."""

    def check_template(self, source: str, question_id: str | None) -> None:
        """Compile and validate one answer template.

        Raises:
            TemplateValidationError: The template cannot be used.
        """

    def check_trait(self, trait: CallableTrait) -> None:
        """Load a callable trait once.

        Raises:
            UntrustedCodeError: Pickled code on an untrusted trait.
            RubricError: The trait does not load.
        """


class _InProcessChecker:
    """Runs template and trait code in this very process (the sandbox's own
    executors, and tools whose operator chose it by name)."""

    def check_template(self, source: str, question_id: str | None) -> None:
        validate_answer_template(source, question_id=question_id)

    def check_trait(self, trait: CallableTrait) -> None:
        trait.load_function()


IN_PROCESS_CHECKER: CodeChecker = _InProcessChecker()


def resolve_checker(checker: CodeChecker | None) -> CodeChecker:
    """``checker``, or the sandbox's default one.

    Raises:
        ImportError: no checker given and the sandbox cannot be imported.
    """
    if checker is not None:
        return checker
    module = importlib.import_module(DEFAULT_CHECKER_MODULE)
    default: CodeChecker = module.sandbox_checker()
    return default
