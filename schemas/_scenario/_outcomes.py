"""Outcome criteria: what a whole scenario run is judged on once its turns are done.

A criterion's ``check`` is a tree: leaves read one turn (``turn_check``), the run
itself (``result_check``: status, turn_count, path, or ``state.<path>`` of the
final state), compare a field of one turn with a field of another (``cross_turn_check``),
or count turns (``count_turns``, ``first_match_index``, which give a
number instead of a verdict); ``all_of`` / ``any_of`` / ``at_least_n`` combine
verdicts. The original framework's class names (``TurnCheck``, ``AllOf``,
``LastTurn`` ...) are accepted as ``type`` values too.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from ._conditions import Condition, Operator, primitive_from

__all__ = [
    "AllOfCheck",
    "AnyOfCheck",
    "AtLeastNCheck",
    "CountTurns",
    "CrossTurnCheck",
    "FirstMatchIndex",
    "OutcomeCheck",
    "OutcomeCriterion",
    "ResultCheck",
    "TurnCheck",
    "TurnScope",
    "code_problem",
]


def code_problem(source: str) -> str | None:
    """Why ``source`` cannot be a scenario's code (it is parsed, never run), or
    None: it must be an expression (a lambda) or define exactly one function."""
    try:
        ast.parse(source, mode="eval")
        return None
    except SyntaxError:
        pass
    try:
        tree = ast.parse(source, mode="exec")
    except SyntaxError as exc:
        return f"it is not Python ({exc.msg}, line {exc.lineno}): {source[:80]!r}"
    if sum(isinstance(n, ast.FunctionDef) for n in tree.body) != 1:
        return "it must be an expression (a lambda) or define exactly one function"
    return None


_TYPE_ALIASES = {
    "TurnCheck": "turn_check",
    "ResultCheck": "result_check",
    "AllOf": "all_of",
    "AnyOf": "any_of",
    "AtLeastN": "at_least_n",
    "CountTurns": "count_turns",
    "FirstMatchIndex": "first_match_index",
    "CrossTurnCheck": "cross_turn_check",
    "LastTurn": "last_turn",
    "FirstTurn": "first_turn",
    "TurnAt": "turn_at",
    "AnyTurn": "any_turn",
    "AllTurns": "all_turns",
}


def _normal_type(data: object) -> object:
    if isinstance(data, Mapping) and data.get("type") in _TYPE_ALIASES:
        return {**data, "type": _TYPE_ALIASES[data["type"]]}
    return data


def _with_type(cls: type[BaseModel], data: object) -> object:
    """``data`` with the model's own ``type`` tag when it has none."""
    if isinstance(data, Mapping) and "type" not in data:
        return {**data, "type": cls.model_fields["type"].annotation.__args__[0]}  # type: ignore[union-attr]
    return data


class TurnScope(BaseModel):
    """Which turns a :class:`TurnCheck` reads: the last, the first, the one at
    ``index`` (negative counts from the end), or any / all turns (of ``node_id``
    when given; with no such turn, neither any nor all holds)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["last_turn", "first_turn", "turn_at", "any_turn", "all_turns"] = "last_turn"
    index: int | None = None
    node_id: str | list[str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: object) -> object:
        if isinstance(data, str):
            data = {"type": data}
        return _normal_type(data)

    @model_validator(mode="after")
    def _index_needed(self) -> TurnScope:
        if self.type == "turn_at" and self.index is None:
            raise ValueError("scope 'turn_at' needs an 'index'")
        return self


class _Leaf(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: object) -> object:
        return Condition.coerce(_with_type(cls, _normal_type(data)))

    @field_validator("verify_with", mode="before", check_fields=False)
    @classmethod
    def _primitive(cls, value: object) -> object:
        # Validated now (an unknown type fails at load), kept as its description.
        return None if value is None else primitive_from(value).describe()


class TurnCheck(_Leaf):
    """A condition over the turns in ``scope``: ``field`` is a turn field
    (``node_id``, ``verify_result``, ``raw_response``, ``question_text``,
    ``parsed.<name>``, ``rubric.<trait>``)."""

    # Required (filled in when absent) so that dumps leaving defaults out keep it.
    type: Literal["turn_check"]
    scope: TurnScope = Field(default_factory=TurnScope)
    field: str
    expected: object = None
    op: Operator = "eq"
    verify_with: dict[str, object] | None = None

    def condition(self) -> Condition:
        """The comparison this check applies to each selected turn."""
        return Condition(
            field=self.field, expected=self.expected, op=self.op, verify_with=self.verify_with
        )


class ResultCheck(_Leaf):
    """A condition over the run: ``status``, ``turn_count``, ``path``,
    ``scenario_id`` or ``state.<path>`` (the final state)."""

    # Required (filled in when absent) so that dumps leaving defaults out keep it.
    type: Literal["result_check"]
    field: str
    expected: object = None
    op: Operator = "eq"
    verify_with: dict[str, object] | None = None

    def condition(self) -> Condition:
        """The comparison applied to the run's field."""
        return Condition(
            field=self.field, expected=self.expected, op=self.op, verify_with=self.verify_with
        )


#: The text normalizers of the original framework, applied in order before a
#: cross-turn comparison (a ``{"mapping": {...}}`` entry maps synonyms).
NORMALIZERS = ("lowercase", "strip", "remove_punctuation", "collapse_whitespace")


class SynonymMap(BaseModel):
    """A normalizer replacing a whole value found in ``mapping`` by its canonical form."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mapping: dict[str, str]


class CrossTurnCheck(BaseModel):
    """Compares a field of one turn with a field of another, as
    ``target <comparison> source`` (``contains``: the target's text contains the
    source's). The turns are picked by ``last_turn``, ``first_turn`` or
    ``turn_at``; fields are read as in :class:`TurnCheck`. With ``normalize``
    both values become text and each normalizer applies in order. A turn that
    does not exist, an ``any_turn``/``all_turns`` scope, or values that cannot be
    compared make the check not hold (as in the original framework).

    Raises:
        pydantic.ValidationError: an unknown comparison or normalizer (naming it).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Required (filled in when absent) so that dumps leaving defaults out keep it.
    type: Literal["cross_turn_check"]
    source_turn: TurnScope
    source_field: str
    target_turn: TurnScope
    target_field: str
    comparison: Literal["eq", "neq", "contains", "gt", "gte", "lt", "lte"]
    normalize: list[str | SynonymMap] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: object) -> object:
        return _with_type(cls, _normal_type(data))

    @field_validator("normalize")
    @classmethod
    def _known(cls, value: list[str | SynonymMap]) -> list[str | SynonymMap]:
        for item in value:
            if isinstance(item, str) and item not in NORMALIZERS:
                known = ", ".join(NORMALIZERS)
                raise ValueError(f"unknown normalizer {item!r} (known: {known}, or a mapping)")
        return value


class CountTurns(_Leaf):
    """How many turns were at ``node_id`` (any node when None) and, when given,
    had ``verify_result``. A number, not a verdict."""

    # Required (filled in when absent) so that dumps leaving defaults out keep it.
    type: Literal["count_turns"]
    node_id: str | list[str] | None = None
    verify_result: bool | None = None


class FirstMatchIndex(_Leaf):
    """The index of the first turn matching the same filters as
    :class:`CountTurns`, or -1."""

    # Required (filled in when absent) so that dumps leaving defaults out keep it.
    type: Literal["first_match_index"]
    node_id: str | list[str] | None = None
    verify_result: bool | None = None


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: object) -> object:
        return _with_type(cls, _normal_type(data))


class AllOfCheck(_Group):
    """Holds when every condition holds (and there is at least one)."""

    # Required (filled in when absent) so that dumps leaving defaults out keep it.
    type: Literal["all_of"]
    conditions: list[OutcomeCheck] = Field(min_length=1)


class AnyOfCheck(_Group):
    """Holds when at least one condition holds."""

    # Required (filled in when absent) so that dumps leaving defaults out keep it.
    type: Literal["any_of"]
    conditions: list[OutcomeCheck] = Field(min_length=1)


class AtLeastNCheck(_Group):
    """Holds when at least ``n`` conditions hold."""

    # Required (filled in when absent) so that dumps leaving defaults out keep it.
    type: Literal["at_least_n"]
    n: int = Field(ge=0)
    conditions: list[OutcomeCheck] = Field(min_length=1)


def _check_tag(data: object) -> str | None:
    data = _normal_type(data)
    if isinstance(data, Mapping):
        return str(data.get("type", "turn_check"))
    return getattr(data, "type", None)


OutcomeCheck = Annotated[
    Annotated[TurnCheck, Tag("turn_check")]
    | Annotated[ResultCheck, Tag("result_check")]
    | Annotated[CrossTurnCheck, Tag("cross_turn_check")]
    | Annotated[CountTurns, Tag("count_turns")]
    | Annotated[FirstMatchIndex, Tag("first_match_index")]
    | Annotated[AllOfCheck, Tag("all_of")]
    | Annotated[AnyOfCheck, Tag("any_of")]
    | Annotated[AtLeastNCheck, Tag("at_least_n")],
    Discriminator(_check_tag),
]
"""One node of an outcome check tree (``type`` picks the kind; default turn_check)."""

for _model in (AllOfCheck, AnyOfCheck, AtLeastNCheck):
    _model.model_rebuild()


_CHECK_TYPES = (
    "turn_check",
    "result_check",
    "cross_turn_check",
    "count_turns",
    "first_match_index",
    "all_of",
    "any_of",
    "at_least_n",
)


def _unknown_type(check: object) -> str | None:
    """The first check ``type`` in the tree that is not one verifleet knows."""
    tag = _check_tag(check)
    if isinstance(check, Mapping) and tag not in _CHECK_TYPES:
        return str(check.get("type"))
    conditions = check.get("conditions") if isinstance(check, Mapping) else None
    for child in conditions if isinstance(conditions, list) else ():
        found = _unknown_type(child)
        if found is not None:
            return found
    return None


class OutcomeCriterion(BaseModel):
    """A named check of the whole run; its value lands in
    ``ScenarioExecutionResult.outcome_results[name]``.

    ``evaluate_source`` is the original framework's outcome code (a lambda of the
    run, ``evaluateSource`` in its checkpoints), run in the sandbox when ``check``
    is absent.

    Raises:
        pydantic.ValidationError: neither a check nor code, or a check ``type``
            that does not exist (the message names the criterion and the type).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    description: str = ""
    check: OutcomeCheck | None = None
    evaluate_source: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _known_types(cls, data: object) -> object:
        # Caught here so the refusal names the criterion and the type once,
        # instead of pydantic's tag error at a positional location.
        if isinstance(data, Mapping) and data.get("check") is not None:
            unknown = _unknown_type(data["check"])
            if unknown is not None:
                raise ValueError(
                    f"outcome criterion {data.get('name')!r}: check type {unknown!r} "
                    "is not supported"
                )
        return data

    @model_validator(mode="after")
    def _something(self) -> OutcomeCriterion:
        if self.check is None and not self.evaluate_source:
            raise ValueError(
                f"outcome criterion {self.name!r} has neither check nor evaluate_source"
            )
        return self
