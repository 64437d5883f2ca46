"""Per-process cache of compiled templates.

Each distinct template source is compiled and validated once per process (keyed by
its template id, under one lock), and each (template, question) pair gets one
question-bound class. A template that fails validation is remembered too, so a bad
template costs one compile, not one per question.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from pydantic import BaseModel

from .._errors import TemplateValidationError
from .base_answer import BaseAnswer
from .validation import (
    COMPILE_LOCK,
    compute_template_id,
    inject_question_id,
    validate_answer_template,
)

__all__ = ["TemplateCache", "TemplateCacheStats", "default_template_cache", "load_answer_class"]


class TemplateCacheStats(BaseModel):
    """Counters of one :class:`TemplateCache`."""

    compiles: int
    raw_hits: int
    templates: int
    bound_classes: int


class TemplateCache:
    """Compiled answer classes by template id, and bound classes by (template, question).

    Thread-safe. ``max_bound`` caps the bound-class table (least recently used
    entries go first); raw classes are never evicted (one per distinct template).
    """

    def __init__(self, max_bound: int = 8192) -> None:
        self._raw: dict[str, type[BaseAnswer] | TemplateValidationError] = {}
        self._bound: OrderedDict[tuple[str, str], type[BaseAnswer]] = OrderedDict()
        self._bound_lock = threading.Lock()
        self._max_bound = max_bound
        self._compiles = 0
        self._raw_hits = 0

    def raw_class(self, source: str, *, question_id: str | None = None) -> type[BaseAnswer]:
        """The validated answer class of ``source`` (no question id bound).

        Raises:
            TemplateValidationError: The template is invalid (the message names
                ``question_id``, even when the failure was cached for another one).
        """
        template_id = compute_template_id(source)
        entry = self._raw.get(template_id)
        if entry is None:
            with COMPILE_LOCK:
                entry = self._raw.get(template_id)
                if entry is None:
                    self._compiles += 1
                    try:
                        entry = validate_answer_template(source)
                    except TemplateValidationError as exc:
                        entry = exc
                    self._raw[template_id] = entry
                else:
                    self._raw_hits += 1
        else:
            self._raw_hits += 1
        if isinstance(entry, TemplateValidationError):
            raise TemplateValidationError(entry.problem, question_id=question_id)
        return entry

    def load(self, source: str, question_id: str) -> type[BaseAnswer]:
        """The answer class of ``source`` bound to ``question_id``.

        Raises:
            TemplateValidationError: As :meth:`raw_class`.
        """
        key = (compute_template_id(source), question_id)
        with self._bound_lock:
            bound = self._bound.get(key)
            if bound is not None:
                self._bound.move_to_end(key)
                return bound
        raw = self.raw_class(source, question_id=question_id)
        bound = inject_question_id(raw, question_id)
        with self._bound_lock:
            existing = self._bound.setdefault(key, bound)
            self._bound.move_to_end(key)
            while len(self._bound) > self._max_bound:
                self._bound.popitem(last=False)
        return existing

    def stats(self) -> TemplateCacheStats:
        """Current counters."""
        return TemplateCacheStats(
            compiles=self._compiles,
            raw_hits=self._raw_hits,
            templates=len(self._raw),
            bound_classes=len(self._bound),
        )

    def clear(self) -> None:
        """Forget every compiled template and bound class, and reset the counters."""
        with COMPILE_LOCK, self._bound_lock:
            self._raw.clear()
            self._bound.clear()
            self._compiles = 0
            self._raw_hits = 0


_DEFAULT = TemplateCache()


def default_template_cache() -> TemplateCache:
    """The process-wide cache that :func:`load_answer_class` uses."""
    return _DEFAULT


def load_answer_class(source: str, question_id: str) -> type[BaseAnswer]:
    """The validated answer class of ``source`` with ``question_id`` injected,
    compiled at most once per process per template id.

    Raises:
        TemplateValidationError: The template is invalid.
    """
    return _DEFAULT.load(source, question_id)
