"""Route the data model's benchmark checks through the sandbox.

Installed when :mod:`verifleet.sandbox` is imported (the pipeline, the workers,
the CLI and the reward server all import it), so :meth:`Benchmark.validate` and
:func:`load_benchmark` compile templates and load callable traits in executors.
The executor itself puts the in-process checkers back: it *is* the sandbox.
"""

from __future__ import annotations

from verifleet.schemas import CallableTrait, CodeCheckers, use_code_checkers

from ._pool import default_pool

__all__ = ["SANDBOX_CHECKERS", "install_sandbox_checkers"]


def _template(source: str, question_id: str | None) -> None:
    default_pool().validate_template(source, question_id=question_id)


def _trait(trait: CallableTrait) -> None:
    default_pool().check_trait(trait.model_dump(mode="json"))


SANDBOX_CHECKERS = CodeCheckers(template=_template, trait=_trait)


def install_sandbox_checkers() -> None:
    """Make benchmark checks run template and trait code in the default pool."""
    use_code_checkers(SANDBOX_CHECKERS)
