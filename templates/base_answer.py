"""``BaseAnswer``: the pydantic base class every answer template subclasses.

A template is filled by the judge (its fields), knows its ground truth (``correct``,
set by ``ground_truth()``, by ``model_post_init`` or derived from ``VerifiedField``
declarations) and decides correctness in ``verify()``. Templates written for the
original framework run unchanged: ``model_post_init`` setting ``self.correct``,
``ground_truth()`` setting ``self.correct`` / ``self.regex``, ``VerifiedField`` with a
``VerificationStrategy`` inner class, hand-written ``verify()`` and
``verify_granular()``.
"""

import weakref
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, TypeAdapter

from .composition import (
    StrategyNode,
    evaluate_strategy,
    granular_score,
    strategy_fields,
    strategy_label,
)
from .primitives import TracePrimitive
from .regex_checks import RegexOutcome, run_regex_checks
from .verified_field import VERIFICATION_KEY, VerificationMeta, verified_fields_of

__all__ = ["RESERVED_FIELD_NAMES", "BaseAnswer", "strip_verification_metadata"]

#: Names a template may not declare as fields: they hold the ground truth.
RESERVED_FIELD_NAMES: frozenset[str] = frozenset({"correct"})

# Instance-dict slot for the raw response; trace primitives and nothing else read it.
_RAW_TRACE_SLOT = "_raw_trace"

_STRATEGY_ADAPTER: TypeAdapter[StrategyNode] = TypeAdapter(StrategyNode)

# Parsed strategy per class: verify() and verify_granular() run per result, the
# strategy is fixed when the class body runs.
_STRATEGIES: weakref.WeakKeyDictionary[type, tuple[StrategyNode | None]] = (
    weakref.WeakKeyDictionary()
)


def strip_verification_metadata(schema: Any) -> Any:
    """Remove every ``VerifiedField`` metadata entry from a JSON schema, in place.

    Returns the same object, for chaining.
    """
    if isinstance(schema, dict):
        schema.pop(VERIFICATION_KEY, None)
        for value in schema.values():
            strip_verification_metadata(value)
    elif isinstance(schema, list):
        for item in schema:
            strip_verification_metadata(item)
    return schema


class BaseAnswer(BaseModel):
    """Base class of answer templates.

    ``extra="allow"`` lets a template attach ``self.correct`` and ``self.regex``
    (and anything else) without declaring fields; none of them reach the judge.
    """

    model_config = ConfigDict(extra="allow")

    #: The question this answer belongs to; set by question-id injection.
    id: str | None = None

    #: Template source, set by the loader for classes compiled from text.
    template_source: ClassVar[str | None] = None
    #: Question id bound by ``inject_question_id`` (None on the raw class).
    bound_question_id: ClassVar[str | None] = None
    #: The class before question-id injection (None on the raw class).
    # No ``from __future__ import annotations`` in this module: pydantic evaluates
    # a base class's string annotations again for every subclass, i.e. for every
    # template compiled.
    raw_answer_class: ClassVar["type[BaseAnswer] | None"] = None

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Reject reserved field names and strategies that name unknown fields.

        Raises:
            TypeError: A field is named ``correct``, or the ``VerificationStrategy``
                is malformed or refers to a field that is not a ``VerifiedField``.
        """
        super().__pydantic_init_subclass__(**kwargs)
        clash = RESERVED_FIELD_NAMES & set(cls.model_fields)
        if clash:
            raise TypeError(
                f"field name(s) {sorted(clash)} are reserved for the ground truth; rename them"
            )
        strategy = cls.verification_strategy()
        if strategy is not None:
            unknown = sorted(set(strategy_fields(strategy)) - set(cls.verified_fields()))
            if unknown:
                raise TypeError(
                    f"VerificationStrategy refers to unknown VerifiedField(s) {unknown}"
                )

    # --- class-level description -------------------------------------------------

    @classmethod
    def verified_fields(cls) -> dict[str, VerificationMeta]:
        """``VerifiedField`` metadata by field name (empty for classic templates)."""
        return verified_fields_of(cls)

    @classmethod
    def verification_strategy(cls) -> StrategyNode | None:
        """The ``VerificationStrategy.verify_strategy`` node, or None (implicit all-of).

        Raises:
            TypeError: The declared strategy is neither a node nor a node's dict form.
        """
        cached = _STRATEGIES.get(cls)
        if cached is not None:
            return cached[0]
        holder = getattr(cls, "VerificationStrategy", None)
        node = getattr(holder, "verify_strategy", None) if holder is not None else None
        parsed: StrategyNode | None = None
        if isinstance(node, Mapping | BaseModel):
            try:
                data = node.model_dump() if isinstance(node, BaseModel) else node
                parsed = _STRATEGY_ADAPTER.validate_python(data)
            except ValueError as exc:
                raise TypeError(f"invalid VerificationStrategy: {exc}") from exc
        elif node is not None:
            raise TypeError(
                f"verify_strategy must be AllOf/AnyOf/AtLeastN, got {type(node).__name__}"
            )
        _STRATEGIES[cls] = (parsed,)
        return parsed

    @classmethod
    def get_source_code(cls) -> str | None:
        """The template source the class was compiled from (original framework name)."""
        return cls.template_source

    @classmethod
    def composition_strategy(cls) -> str | None:
        """``"all_of"``, ``"any_of"``, ``"at_least_n(N)"``, or None without a strategy."""
        return strategy_label(cls.verification_strategy())

    @classmethod
    def judge_fields(cls) -> list[str]:
        """Fields the judge fills: all but ``id`` and trace-verified fields."""
        trace = {name for name, meta in cls.verified_fields().items() if meta.is_trace}
        return [name for name in cls.model_fields if name != "id" and name not in trace]

    @classmethod
    def trace_fields(cls) -> list[str]:
        """Fields checked on the raw response (never shown to the judge)."""
        return [name for name, meta in cls.verified_fields().items() if meta.is_trace]

    @classmethod
    def defines_verify(cls) -> bool:
        """Whether ``verify()`` means something: written by hand, derived from
        ``VerifiedField`` declarations, or trivially True for a template with no
        judge fields (regex-only)."""
        return (
            cls.verify is not BaseAnswer.verify
            or bool(cls.verified_fields())
            or not cls.judge_fields()
        )

    @classmethod
    def defines_granular(cls) -> bool:
        """Whether ``verify_granular()`` yields a score (hand-written or derived)."""
        return cls.verify_granular is not BaseAnswer.verify_granular or bool(cls.verified_fields())

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Pydantic's schema without ``VerifiedField`` metadata (no ground truth leaks)."""
        schema: dict[str, Any] = strip_verification_metadata(
            super().model_json_schema(*args, **kwargs)
        )
        return schema

    # --- lifecycle -----------------------------------------------------------------

    def model_post_init(self, context: Any, /) -> None:
        """Set the ground truth once fields are populated.

        A ``ground_truth()`` override runs here (it may set ``self.correct`` or
        return the dict); otherwise ``VerifiedField`` ground truths become
        ``self.correct``.
        """
        if type(self).ground_truth is not BaseAnswer.ground_truth:
            produced = self.ground_truth()
            if isinstance(produced, dict) and getattr(self, "correct", None) is None:
                self.correct = produced
        elif getattr(self, "correct", None) is None:
            derived = self._verified_ground_truth()
            if derived is not None:
                self.correct = derived

    def ground_truth(self) -> dict[str, Any] | None:
        """Hook for templates: set ``self.correct`` (and ``self.regex``) or return a dict.

        The base implementation returns the current ground truth (see
        :meth:`get_ground_truth`).
        """
        return self.get_ground_truth()

    def get_ground_truth(self) -> Any:
        """The ground truth: ``self.correct`` if set, else the ``VerifiedField``
        values, else None. Not necessarily a dict: validation checks that."""
        correct = getattr(self, "correct", None)
        return correct if correct is not None else self._verified_ground_truth()

    def _verified_ground_truth(self) -> dict[str, Any] | None:
        verified = type(self).verified_fields()
        if not verified:
            return None
        return {name: meta.ground_truth for name, meta in verified.items()}

    def set_question_id(self, question_id: str) -> None:
        """Set :attr:`id`."""
        self.id = question_id

    def set_raw_trace(self, raw_trace: str) -> None:
        """Attach the raw response that trace-verified fields are checked against."""
        self.__dict__[_RAW_TRACE_SLOT] = raw_trace

    def get_raw_trace(self) -> str | None:
        """The attached raw response, or None."""
        value = self.__dict__.get(_RAW_TRACE_SLOT)
        return value if isinstance(value, str) else None

    # --- verification --------------------------------------------------------------

    def _evaluate_fields(self) -> tuple[dict[str, bool], dict[str, float]] | None:
        verified = type(self).verified_fields()
        if not verified:
            return None
        results: dict[str, bool] = {}
        scores: dict[str, float] = {}
        for name, meta in verified.items():
            primitive = meta.verify_with
            if isinstance(primitive, TracePrimitive):
                trace = self.get_raw_trace()
                if trace is None:
                    raise ValueError(
                        f"field {name!r} is checked on the raw response: call set_raw_trace() first"
                    )
                results[name] = primitive.check_trace(trace) == bool(meta.ground_truth)
                scores[name] = 1.0 if results[name] else 0.0
            else:
                value = getattr(self, name, None)
                results[name] = primitive.check(value, meta.ground_truth)
                scores[name] = primitive.score(value, meta.ground_truth)
        return results, scores

    def field_results(self) -> dict[str, bool] | None:
        """Pass/fail of every ``VerifiedField``; None for classic templates.

        Raises:
            ValueError: A trace-verified field needs the raw response and
                :meth:`set_raw_trace` was not called.
        """
        evaluated = self._evaluate_fields()
        return None if evaluated is None else evaluated[0]

    def field_scores(self) -> dict[str, float] | None:
        """Partial credit (0.0–1.0) of every ``VerifiedField``: 1/0 like
        :meth:`field_results` except for graded primitives; None for classic
        templates.

        Raises:
            ValueError: As :meth:`field_results`.
        """
        evaluated = self._evaluate_fields()
        return None if evaluated is None else evaluated[1]

    def verify(self) -> bool:
        """Whether the parsed answer is correct.

        The default combines ``VerifiedField`` results with the composition strategy
        (all must pass without one); a template with no judge fields (regex-only)
        passes here and is decided by its regex checks.

        Raises:
            NotImplementedError: A classic template with fields but no ``verify()``.
            ValueError: See :meth:`field_results`.
        """
        results = self.field_results()
        if results is None:
            if not type(self).judge_fields():
                return True
            raise NotImplementedError(
                f"{type(self).__name__} has fields but neither verify() nor VerifiedField"
            )
        strategy = type(self).verification_strategy()
        if strategy is None:
            return all(results.values())
        return evaluate_strategy(strategy, results)

    def verify_granular(self) -> float:
        """Partial credit in [0.0, 1.0], weighted and composition-aware (see
        ``composition.granular_score``).

        Raises:
            NotImplementedError: A classic template without its own
                ``verify_granular()`` (check :meth:`defines_granular` first).
            ValueError: See :meth:`field_results`.
        """
        scores = self.field_scores()
        if scores is None:
            raise NotImplementedError(f"{type(self).__name__} defines no verify_granular()")
        weights = {name: meta.weight for name, meta in type(self).verified_fields().items()}
        return granular_score(type(self).verification_strategy(), scores, weights)

    def regex_checks(self) -> dict[str, Any] | None:
        """The declared regex checks (``self.regex``), or None when there are none."""
        checks = getattr(self, "regex", None)
        return dict(checks) if isinstance(checks, Mapping) and checks else None

    def verify_regex(self, text: str) -> RegexOutcome:
        """Run the template's regex checks on the raw response ``text``; never raises."""
        return run_regex_checks(self.regex_checks(), text)
