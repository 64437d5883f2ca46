"""Where benchmark checks run template and callable-trait code.

Checking a benchmark (:meth:`Benchmark.validate`, :func:`load_benchmark`) has to
compile its templates and load its callable traits, which runs their authors'
code. By default that happens in this process (a process that only uses the data
model has nothing else). Importing :mod:`verifleet.sandbox` (which the pipeline,
the workers and the CLI all do) installs checkers that run the code in sandbox
executors instead, so no template or trait code runs in a worker, the CLI or the
reward server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from verifleet.templates import validate_answer_template

from ._rubric import CallableTrait

__all__ = ["CodeCheckers", "check_callable_trait", "check_template", "use_code_checkers"]

#: ``(source, question_id)``; raises TemplateValidationError when the template is unusable.
TemplateChecker = Callable[[str, str | None], None]
#: Raises RubricError / UntrustedCodeError when the trait cannot be loaded.
TraitChecker = Callable[[CallableTrait], None]


def _in_process_template(source: str, question_id: str | None) -> None:
    validate_answer_template(source, question_id=question_id)


def _in_process_trait(trait: CallableTrait) -> None:
    trait.load_function()


@dataclass(frozen=True)
class CodeCheckers:
    """The pair of checkers in use."""

    template: TemplateChecker = _in_process_template
    trait: TraitChecker = _in_process_trait


IN_PROCESS = CodeCheckers()
_current = IN_PROCESS


def use_code_checkers(checkers: CodeCheckers) -> CodeCheckers:
    """Install ``checkers`` for this process; returns the previous ones."""
    global _current
    previous, _current = _current, checkers
    return previous


def check_template(source: str, *, question_id: str | None = None) -> None:
    """Validate an answer template with the installed checker.

    Raises:
        TemplateValidationError: The template cannot be used (as
            :func:`validate_answer_template`).
    """
    _current.template(source, question_id)


def check_callable_trait(trait: CallableTrait) -> None:
    """Load a callable trait once with the installed checker.

    Raises:
        UntrustedCodeError: Pickled code on an untrusted trait.
        RubricError: The trait does not load.
    """
    _current.trait(trait)
