"""The per-process template cache: one compile per template id even when 32 threads
ask at once (no CPython-106905 SystemError), bound classes per question, and a
cached failure re-raised with each asking question's id."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from verifleet.schemas import TemplateValidationError
from verifleet.templates import (
    TemplateCache,
    build_answer,
    default_template_cache,
    judge_json_schema,
    load_answer_class,
    parsed_ground_truth,
    source_digest,
)

THREADS = 32


def _template(n: int) -> str:
    # Deeply nested expressions make parsing slow enough for threads to overlap.
    nested = "(" * 40 + str(n) + ")" * 40
    return (
        "from typing import Optional\n"
        "from pydantic import Field\n"
        "from karenina.schemas.entities import BaseAnswer\n\n"
        "class Answer(BaseAnswer):\n"
        "    value: int = Field(description='the value')\n"
        "    note: Optional[str] = None\n\n"
        "    def model_post_init(self, __context):\n"
        f"        self.correct = {{'value': {nested}}}\n\n"
        "    def verify(self) -> bool:\n"
        "        return self.value == self.correct['value']\n"
    )


def test_thirty_two_threads_compile_each_template_once() -> None:
    cache = TemplateCache()
    sources = [_template(n) for n in range(8)]
    barrier = threading.Barrier(THREADS)

    def work(worker: int) -> list[tuple[int, str, bool]]:
        barrier.wait()
        seen = []
        for round_ in range(6):
            n = (worker + round_) % len(sources)
            qid = f"q{worker}-{round_}"
            cls = cache.load(sources[n], qid)
            answer = build_answer(cls, {"value": n})
            consistent = parsed_ground_truth(cls) == {"value": n} and list(
                judge_json_schema(cls)["properties"]
            ) == ["value", "note"]
            seen.append((n, answer.id or "", answer.verify() and consistent))
        return seen

    with ThreadPoolExecutor(THREADS) as pool:
        results = [item for chunk in pool.map(work, range(THREADS)) for item in chunk]

    assert len(results) == THREADS * 6
    assert all(ok for _, _, ok in results)
    assert all(qid.startswith("q") for _, qid, _ in results)
    stats = cache.stats()
    assert stats.compiles == len(sources)
    assert stats.templates == len(sources)
    assert stats.bound_classes == THREADS * 6


def test_same_question_reuses_its_bound_class_and_sources_share_the_raw_class() -> None:
    cache = TemplateCache()
    source = _template(1)
    first = cache.load(source, "qa")
    assert cache.load(source, "qa") is first
    # Line-ending variants are the same template id, so they share one compile.
    other = cache.load(source.replace("\n", "\r\n"), "qb")
    assert other.raw_answer_class is first.raw_answer_class
    assert cache.stats().compiles == 1


def test_failures_are_cached_and_reported_for_each_question() -> None:
    cache = TemplateCache()
    bad = "import os\n" + _template(2)
    for qid in ("q1", "q2", "q3"):
        with pytest.raises(TemplateValidationError) as info:
            cache.load(bad, qid)
        assert info.value.question_id == qid
        assert str(info.value).startswith(f"question {qid}: template imports 'os'")
    assert cache.stats().compiles == 1


def test_bound_class_table_is_bounded() -> None:
    cache = TemplateCache(max_bound=3)
    source = _template(3)
    for i in range(5):
        cache.load(source, f"q{i}")
    assert cache.stats().bound_classes == 3
    assert cache.stats().compiles == 1


def test_clear_forgets_everything() -> None:
    cache = TemplateCache()
    cache.load(_template(4), "q")
    cache.clear()
    assert cache.stats().templates == 0 and cache.stats().compiles == 0
    cache.load(_template(4), "q")
    assert cache.stats().compiles == 1


def test_module_level_loader_uses_the_process_cache() -> None:
    source = _template(5) + "\n# unique to this test\n"
    before = default_template_cache().stats().compiles
    cls = load_answer_class(source, "qx")
    assert load_answer_class(source, "qx") is cls
    assert default_template_cache().stats().compiles == before + 1
    # Named by the source digest (not the MD5 template id: see source_digest).
    assert cls.__module__.endswith(source_digest(source))


def test_template_table_is_bounded_and_recompiles_evicted_templates() -> None:
    cache = TemplateCache(max_templates=2)
    for n in (10, 11, 12):
        cache.raw_class(_template(n))
    assert cache.stats().templates == 2
    cache.raw_class(_template(12))  # still cached
    assert cache.stats().compiles == 3
    cache.raw_class(_template(10))  # evicted first, compiled again
    assert cache.stats().compiles == 4


def test_evicted_templates_leave_sys_modules() -> None:
    """A worker that sees more distinct templates than the cache holds must not
    keep every one of them alive through ``sys.modules``."""
    import sys

    cache = TemplateCache(max_templates=2)
    sources = [
        f"class Answer(BaseAnswer):\n    x: int = Field(description='x')\n\n"
        f"    def ground_truth(self):\n        return {{'x': {i}}}\n\n"
        f"    def verify(self) -> bool:\n        return self.x == {i}\n"
        for i in range(5)
    ]
    classes = [cache.raw_class(src) for src in sources]
    template_modules = {c.__module__ for c in classes}
    assert len(template_modules) == 5
    assert len(template_modules & set(sys.modules)) == 2, "only the cached ones stay"
    assert classes[0](x=0).verify() is True, "an evicted class still works"
