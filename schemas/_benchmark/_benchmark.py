"""The benchmark: questions plus the rubric every question shares."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from .._checkers import CodeChecker
from .._rubric import DynamicRubric, Rubric, merge_dynamic_rubrics, merge_rubrics
from .._scenario import BrokenScenario, ScenarioDefinition
from ._question import Question
from ._validation import check_benchmark

__all__ = ["Benchmark"]


class Benchmark(BaseModel):
    """A named, versioned set of questions, multi-turn scenarios and an optional
    global rubric.

    Question ids are unique, and so are scenario ids; constructing a benchmark
    with a repeated id fails with a ``ValidationError`` naming it.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    version: str = "0.1.0"
    description: str = ""
    creator: str | None = None
    id: str | None = None
    questions: list[Question] = Field(default_factory=list)
    global_rubric: Rubric | None = None
    global_dynamic_rubric: DynamicRubric | None = None
    custom_metadata: dict[str, object] = Field(default_factory=dict)
    scenarios: list[ScenarioDefinition] = Field(default_factory=list)
    # Scenarios that failed validation: each fails alone when the job runs.
    broken_scenarios: list[BrokenScenario] = Field(default_factory=list)

    _index: dict[str, Question] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _unique_ids(self) -> Benchmark:
        index: dict[str, Question] = {}
        for question in self.questions:
            if question.id in index:
                raise ValueError(f"question id {question.id!r} is used by more than one question")
            index[question.id] = question
        self._index = index
        seen: set[str] = set()
        ids = [s.id for s in self.scenarios] + [b.id for b in self.broken_scenarios]
        for scenario_id in ids:
            if scenario_id in seen:
                raise ValueError(f"scenario id {scenario_id!r} is used by more than one scenario")
            seen.add(scenario_id)
        return self

    def get_scenario(self, scenario_id: str) -> ScenarioDefinition:
        """The scenario with ``scenario_id``.

        Raises:
            KeyError: no such scenario.
        """
        for scenario in self.scenarios:
            if scenario.id == scenario_id:
                return scenario
        raise KeyError(f"no scenario {scenario_id!r} in benchmark {self.name!r}")

    @property
    def question_ids(self) -> list[str]:
        """Question ids in benchmark order."""
        return [q.id for q in self.questions]

    def get_question(self, question_id: str) -> Question:
        """The question with ``question_id``.

        Raises:
            KeyError: no such question (the message lists how many there are).
        """
        if len(self._index) != len(self.questions):
            # The list was mutated after construction; rebuild the lookup.
            self._index = {q.id: q for q in self.questions}
        try:
            return self._index[question_id]
        except KeyError:
            raise KeyError(
                f"no question {question_id!r} in benchmark {self.name!r} "
                f"({len(self.questions)} questions)"
            ) from None

    def rubric_for(self, question: Question | str) -> Rubric | None:
        """The global rubric merged with the question's own rubric.

        Raises:
            RubricError: a trait name is defined in both (message names the trait,
                the global rubric and the question).
            KeyError: ``question`` is an unknown id.
        """
        q = self.get_question(question) if isinstance(question, str) else question
        return merge_rubrics(self.global_rubric, q.question_rubric, question_id=q.id)

    def dynamic_rubric_for(self, question: Question | str) -> DynamicRubric | None:
        """The global dynamic rubric merged with the question's own (same rules)."""
        q = self.get_question(question) if isinstance(question, str) else question
        return merge_dynamic_rubrics(
            self.global_dynamic_rubric, q.question_dynamic_rubric, question_id=q.id
        )

    def all_rubrics(self) -> list[tuple[str | None, Rubric | DynamicRubric]]:
        """Every rubric with its question id (``None`` for the global ones)."""
        found: list[tuple[str | None, Rubric | DynamicRubric]] = [
            (None, r) for r in (self.global_rubric, self.global_dynamic_rubric) if r is not None
        ]
        for q in self.questions:
            found.extend(
                (q.id, r) for r in (q.question_rubric, q.question_dynamic_rubric) if r is not None
            )
        return found

    def validate(  # type: ignore[override]
        self,
        *,
        templates: bool = True,
        checker: CodeChecker | None = None,
        question_templates: bool = True,
    ) -> list[str]:
        """Every problem found in this benchmark, as messages, in the words every
        path uses (see :func:`check_benchmark`).

        Checks each answer template (not when ``templates`` is False; only the
        scenario nodes' when ``question_templates`` is False), each
        callable trait (compiles, or pickled and trusted), each question's and
        scenario node's merged rubrics, and lists each scenario that failed
        validation. Template and trait code runs where ``checker`` runs it: the
        sandbox's executors when None, never this process. Nothing is raised: an
        empty list means ready. (Overrides pydantic v1's deprecated classmethod
        of the same name.)
        """
        found = check_benchmark(
            self, templates=templates, checker=checker, question_templates=question_templates
        )
        return [p.message for p in found.problems if p.kind != "empty"]
