"""The one place that says what is wrong with a benchmark, and what that costs.

:meth:`Benchmark.validate`, :func:`load_benchmark` and a job's validation at
submit (and so ``run``, ``submit``, ``serve`` and the Python API) all ask
:func:`check_benchmark`, so a problem is found by the same rule and worded the
same way everywhere:

- ``question q1: template: <why>`` / ``scenario s, node n: template: <why>``: a
  template that does not compile or is refused; that question (or that node's
  turn) fails alone when the job runs;
- ``scenario 's': <why>``: a scenario that failed validation (its node or edge
  named); every run of it fails alone;
- ``question q1: rubric: <why>`` / ``scenario s, node n: rubric: <why>``: rubrics
  that cannot be merged (two traits share a name);
- ``question q1: <why>`` / ``global rubric: <why>``: a callable trait that does
  not load;
- with a configuration: ``question q1: evaluation mode 'template_only' needs an
  answer template`` (fails alone), ``evaluation mode 'rubric_only' needs rubric
  traits; the benchmark has none`` and ``rubric_trait_names: unknown trait(s) x``
  (stop the job).

Each problem says whether it fails alone (``alone``): those do not stop a job
unless it is strict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .._checkers import CodeChecker, resolve_checker
from .._errors import RubricError, TemplateValidationError, UntrustedCodeError

if TYPE_CHECKING:
    from .._config import VerificationConfig
    from ._benchmark import Benchmark

__all__ = ["BenchmarkCheck", "BenchmarkProblem", "check_benchmark", "template_problem"]

ProblemKind = Literal["template", "scenario", "rubric", "trait", "mode", "empty"]


@dataclass(frozen=True)
class BenchmarkProblem:
    """One problem: its words, what it concerns and whether it fails alone.

    Attributes:
        message: The problem as every path reports it.
        kind: ``template``, ``scenario`` (failed validation), ``rubric``,
            ``trait`` (a callable that does not load), ``mode`` (the
            configuration's evaluation mode), ``empty`` (nothing to run).
        alone: Fails its own question or scenario only (a template, a broken
            scenario, a missing template); False stops the job.
        question_id: The question it concerns, when one.
    """

    message: str
    kind: ProblemKind
    alone: bool
    question_id: str | None = None


@dataclass
class BenchmarkCheck:
    """Everything :func:`check_benchmark` found, in benchmark order."""

    problems: list[BenchmarkProblem] = field(default_factory=list)

    def messages(self, *, alone: bool | None = None) -> list[str]:
        """The messages, each once; ``alone`` keeps only those that fail alone
        (True) or only those that stop the job (False)."""
        picked = [p.message for p in self.problems if alone is None or p.alone == alone]
        return list(dict.fromkeys(picked))

    def add(
        self, message: str, kind: ProblemKind, *, alone: bool, question_id: str | None = None
    ) -> None:
        self.problems.append(BenchmarkProblem(message, kind, alone, question_id))


def template_problem(where: str, problem: str) -> str:
    """How every path words a template that does not compile or is refused."""
    return f"{where}: template: {problem}"


def _template(
    check: BenchmarkCheck,
    checker: CodeChecker,
    source: str,
    question_id: str,
    where: str,
    *,
    own_question: str | None,
) -> None:
    try:
        checker.check_template(source, question_id)
    except TemplateValidationError as exc:
        check.add(
            template_problem(where, exc.problem), "template", alone=True, question_id=own_question
        )


def check_benchmark(
    benchmark: Benchmark,
    *,
    templates: bool = True,
    checker: CodeChecker | None = None,
    config: VerificationConfig | None = None,
    question_templates: bool = True,
) -> BenchmarkCheck:
    """Check ``benchmark`` (and, given one, its fit with ``config``).

    Args:
        benchmark: The benchmark.
        templates: Check each answer template (compile and validate it where
            ``checker`` runs code); False leaves templates to the run.
        checker: Where template and callable-trait code runs: the sandbox's
            executors when None, never this process.
        config: Also check what the configuration asks of the benchmark (a
            template per question in template modes, traits in rubric modes,
            ``rubric_trait_names`` that exist).
        question_templates: With ``templates``, check the questions' templates
            too; False checks only the scenario nodes' (a local run checks
            each question's template as its first unit starts, in the run's
            own template processes, in the same words).

    Returns:
        Every problem, in benchmark order; nothing is raised for a problem.

    Raises:
        ImportError: no checker given and the sandbox cannot be imported (only
            when there is code to check).
    """
    check = BenchmarkCheck()
    if not (benchmark.questions or benchmark.scenarios or benchmark.broken_scenarios):
        check.add("the benchmark has no questions and no scenarios", "empty", alone=False)
    for qid, rubric in benchmark.all_rubrics():
        where = f"question {qid}" if qid else "global rubric"
        for trait in rubric.callable_traits:
            if not trait.has_code:
                continue  # a checkpoint trait without code fails when evaluated
            try:
                checker = resolve_checker(checker)
                checker.check_trait(trait)
            except (RubricError, UntrustedCodeError) as exc:
                check.add(f"{where}: {exc}", "trait", alone=False, question_id=qid)
    for q in benchmark.questions:
        if templates and question_templates and q.has_template:
            checker = resolve_checker(checker)
            _template(
                check, checker, q.answer_template or "", q.id, f"question {q.id}", own_question=q.id
            )
        try:
            benchmark.rubric_for(q)
            benchmark.dynamic_rubric_for(q)
        except RubricError as exc:
            check.add(f"question {q.id}: rubric: {exc}", "rubric", alone=False, question_id=q.id)
    for scenario in benchmark.scenarios:
        for node in scenario.nodes:
            where = f"scenario {scenario.id}, node {node.id}"
            if templates and node.question.has_template:
                checker = resolve_checker(checker)
                _template(
                    check,
                    checker,
                    node.question.answer_template or "",
                    node.question.id,
                    where,
                    own_question=None,
                )
            try:
                benchmark.rubric_for(node.question)
            except RubricError as exc:
                check.add(f"{where}: rubric: {exc}", "rubric", alone=False)
    for broken in benchmark.broken_scenarios:
        check.add(broken.message, "scenario", alone=True)
    if config is not None:
        _check_config(check, benchmark, config)
    return check


def _check_config(check: BenchmarkCheck, benchmark: Benchmark, config: VerificationConfig) -> None:
    if config.template_stages_enabled:
        needs = f"evaluation mode '{config.evaluation_mode}' needs an answer template"
        for q in benchmark.questions:
            if not q.has_template:
                check.add(f"question {q.id}: {needs}", "mode", alone=True, question_id=q.id)
        for s in benchmark.scenarios:
            for n in s.nodes:
                if not n.question.has_template:
                    check.add(f"scenario {s.id}, node {n.id}: {needs}", "mode", alone=True)
    if config.rubric_stages_enabled:
        names: set[str] = set()
        for q in benchmark.questions:
            try:
                rubrics = (benchmark.rubric_for(q), benchmark.dynamic_rubric_for(q))
            except RubricError:
                continue  # reported above
            for rubric in rubrics:
                if rubric is not None:
                    names.update(rubric.get_trait_names())
        if not names:
            check.add(
                f"evaluation mode '{config.evaluation_mode}' needs rubric traits; "
                "the benchmark has none",
                "mode",
                alone=False,
            )
        unknown = sorted(set(config.rubric_trait_names or []) - names)
        if unknown:
            check.add(
                f"rubric_trait_names: unknown trait(s) {', '.join(unknown)}", "mode", alone=False
            )
