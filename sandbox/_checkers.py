"""The sandbox's :class:`~verifleet.schemas.CodeChecker`: benchmark checks
(:meth:`Benchmark.validate`, :func:`load_benchmark`) compile templates and load
callable traits in executors. It is the data model's default checker (looked up
by :func:`sandbox_checker`), and can be passed explicitly with a pool of one's own.
"""

from __future__ import annotations

from verifleet.schemas import CallableTrait

from ._pool import SandboxPool, default_pool

__all__ = ["SandboxChecker", "sandbox_checker"]


class SandboxChecker:
    """Checks template and trait code in ``pool`` (the process-wide one when None)."""

    def __init__(self, pool: SandboxPool | None = None) -> None:
        self._pool = pool

    def _use(self) -> SandboxPool:
        return self._pool if self._pool is not None else default_pool()

    def check_template(self, source: str, question_id: str | None) -> None:
        """Compile and validate ``source`` in an executor.

        Raises:
            TemplateValidationError: As :meth:`SandboxPool.load_template`.
        """
        self._use().validate_template(source, question_id=question_id)

    def check_trait(self, trait: CallableTrait) -> None:
        """Load a callable trait once in an executor.

        Raises:
            UntrustedCodeError, RubricError: As :meth:`SandboxPool.check_trait`.
        """
        self._use().check_trait(trait.model_dump(mode="json"))


def sandbox_checker(pool: SandboxPool | None = None) -> SandboxChecker:
    """The checker that runs code in ``pool`` (the process-wide pool when None)."""
    return SandboxChecker(pool)
