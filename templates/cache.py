"""Per-process cache of compiled templates.

Each distinct template source is compiled and validated once per process (keyed by
the SHA-256 of its source, under one lock: never by the MD5 template id, so
two sources made to collide under it cannot share a class), and each (template, question) pair gets one
question-bound class. A template that fails validation is remembered too, so a bad
template costs one compile, not one per question.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict

from pydantic import BaseModel

from verifleet.errors import TemplateValidationError

from .base_answer import BaseAnswer
from .validation import (
    COMPILE_LOCK,
    TEMPLATE_MODULE_PREFIX,
    inject_question_id,
    source_digest,
    validate_answer_template,
)

__all__ = ["TemplateCache", "TemplateCacheStats", "default_template_cache", "load_answer_class"]


class TemplateCacheStats(BaseModel):
    """Counters of one :class:`TemplateCache` (``raw_hits`` is approximate under
    contention; ``compiles`` is exact)."""

    compiles: int
    raw_hits: int
    templates: int
    bound_classes: int


_Entry = type[BaseAnswer] | TemplateValidationError


def _forget_module(entry: _Entry) -> None:
    """Drop an evicted template's module from ``sys.modules``.

    Validation registers each template's namespace there (pydantic resolves names
    through it while the class is built); left behind, a long-lived worker keeps
    every template it ever compiled alive, whatever the cache's bound. Classes
    still in use keep their own namespace through their functions' globals.
    """
    if isinstance(entry, type):
        module = entry.__module__
        if module.startswith(TEMPLATE_MODULE_PREFIX):
            sys.modules.pop(module, None)


class TemplateCache:
    """Compiled answer classes by source digest, and bound classes by (template, question).

    Thread-safe. Both tables are LRU-bounded (``max_templates``, ``max_bound``),
    so a worker's cache stays bounded whatever the job. Jobs send a question's
    units together (question-major order), so a worker needs a few questions at
    a time; callers that visit questions in random order over more templates than
    the bound (rollout scoring of a large benchmark) recompile evicted ones.
    """

    def __init__(self, max_templates: int = 1024, max_bound: int = 1024) -> None:
        self._raw: OrderedDict[str, _Entry] = OrderedDict()
        self._bound: OrderedDict[tuple[str, str], type[BaseAnswer]] = OrderedDict()
        self._table_lock = threading.Lock()
        self._max_templates = max_templates
        self._max_bound = max_bound
        self._compiles = 0
        self._raw_hits = 0

    def _cached_raw(self, digest: str) -> _Entry | None:
        with self._table_lock:
            entry = self._raw.get(digest)
            if entry is not None:
                self._raw.move_to_end(digest)
                self._raw_hits += 1
            return entry

    def raw_class(self, source: str, *, question_id: str | None = None) -> type[BaseAnswer]:
        """The validated answer class of ``source`` (no question id bound).

        Compiles under the process-wide compile lock, so concurrent callers with
        the same template wait for one compile instead of each running their own.

        Raises:
            TemplateValidationError: The template is invalid (the message names
                ``question_id``, even when the failure was cached for another one).
        """
        digest = source_digest(source)
        entry = self._cached_raw(digest)
        if entry is None:
            with COMPILE_LOCK:
                entry = self._cached_raw(digest)
                if entry is None:
                    self._compiles += 1
                    try:
                        entry = validate_answer_template(source)
                    except TemplateValidationError as exc:
                        entry = exc
                    with self._table_lock:
                        self._raw[digest] = entry
                        while len(self._raw) > self._max_templates:
                            _forget_module(self._raw.popitem(last=False)[1])
        if isinstance(entry, TemplateValidationError):
            raise TemplateValidationError(entry.problem, question_id=question_id)
        return entry

    def load(self, source: str, question_id: str) -> type[BaseAnswer]:
        """The answer class of ``source`` bound to ``question_id``.

        Raises:
            TemplateValidationError: As :meth:`raw_class`.
        """
        key = (source_digest(source), question_id)
        with self._table_lock:
            bound = self._bound.get(key)
            if bound is not None:
                self._bound.move_to_end(key)
                return bound
        bound = inject_question_id(self.raw_class(source, question_id=question_id), question_id)
        with self._table_lock:
            existing = self._bound.setdefault(key, bound)
            self._bound.move_to_end(key)
            while len(self._bound) > self._max_bound:
                self._bound.popitem(last=False)
        return existing

    def stats(self) -> TemplateCacheStats:
        """Current counters."""
        with self._table_lock:
            return TemplateCacheStats(
                compiles=self._compiles,
                raw_hits=self._raw_hits,
                templates=len(self._raw),
                bound_classes=len(self._bound),
            )

    def clear(self) -> None:
        """Forget every compiled template and bound class, and reset the counters."""
        with COMPILE_LOCK, self._table_lock:
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
    compiled at most once per process per template source.

    Raises:
        TemplateValidationError: The template is invalid.
    """
    return _DEFAULT.load(source, question_id)
