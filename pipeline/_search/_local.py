"""Offline search: Okapi BM25 over a local document collection.

The collection is a folder of ``.txt`` / ``.md`` files (searched recursively; the
file name is the title) or a ``.jsonl`` file of ``{"content", "title", "url"}``
records. Documents are cut into passages (paragraphs, long ones into windows of
about :data:`PASSAGE_WORDS` words) and each query returns the best-scoring
passages. The index is built once per collection and reused while the files are
unchanged, so search-enhanced deep judgment runs with no network.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ._provider import SearchError, SearchHit

__all__ = ["PASSAGE_WORDS", "LocalSearch"]

PASSAGE_WORDS = 120
_K1 = 1.5
_B = 0.75
_TOKEN = re.compile(r"\w+", re.UNICODE)
# Words too common to tell passages apart; BM25's idf would nearly zero them anyway.
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "which",
        "with",
    ]
)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens without stopwords."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOPWORDS]


@dataclass(frozen=True)
class _Passage:
    content: str
    title: str | None
    url: str | None


def _windows(paragraph: str) -> Iterator[str]:
    words = paragraph.split()
    step = PASSAGE_WORDS // 2  # overlapping windows: a claim across a cut is still found
    if len(words) <= PASSAGE_WORDS:
        yield paragraph
        return
    for start in range(0, len(words) - step, step):
        yield " ".join(words[start : start + PASSAGE_WORDS])


def _passages(content: str, title: str | None, url: str | None) -> Iterator[_Passage]:
    for paragraph in re.split(r"\n\s*\n", content):
        paragraph = " ".join(paragraph.split())
        if paragraph:
            for window in _windows(paragraph):
                yield _Passage(window, title, url)


def _read_collection(path: Path) -> list[_Passage]:
    passages: list[_Passage] = []
    if path.is_dir():
        for file in sorted(p for p in path.rglob("*") if p.suffix.lower() in (".txt", ".md")):
            text = file.read_text(encoding="utf-8", errors="replace")
            passages.extend(_passages(text, file.stem, None))
    elif path.suffix.lower() == ".jsonl":
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SearchError(f"{path}, line {number}: not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict) or not isinstance(record.get("content"), str):
                raise SearchError(f"{path}, line {number}: expected an object with 'content'")
            passages.extend(_passages(record["content"], record.get("title"), record.get("url")))
    else:
        raise SearchError(f"{path}: expected a folder of .txt/.md files or a .jsonl file")
    if not passages:
        raise SearchError(f"{path}: the document collection is empty")
    return passages


class _Index:
    """BM25 statistics of a passage list."""

    def __init__(self, passages: list[_Passage]) -> None:
        self.passages = passages
        self.terms = [Counter(tokens(p.content)) for p in passages]
        self.lengths = [sum(t.values()) for t in self.terms]
        self.average = sum(self.lengths) / len(self.lengths) or 1.0
        frequency: Counter[str] = Counter()
        for terms in self.terms:
            frequency.update(terms.keys())
        n = len(passages)
        self.idf = {t: math.log((n - f + 0.5) / (f + 0.5) + 1.0) for t, f in frequency.items()}

    def top(self, query: str, k: int) -> list[tuple[float, int]]:
        wanted = set(tokens(query))
        scored = []
        for index, (terms, length) in enumerate(zip(self.terms, self.lengths, strict=True)):
            score = 0.0
            for term in wanted:
                tf = terms.get(term, 0)
                if tf:
                    norm = tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * length / self.average))
                    score += self.idf[term] * norm
            if score > 0:
                scored.append((score, index))
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return scored[:k]


_indexes: dict[tuple[str, float], _Index] = {}
_indexes_lock = threading.Lock()


def _stamp(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return max((p.stat().st_mtime for p in files), default=0.0)


class LocalSearch:
    """BM25 search over local documents, offline.

    Args:
        documents: A folder of ``.txt``/``.md`` files or a ``.jsonl`` file.
        max_results: Passages per query.

    Raises:
        SearchError: the collection is missing, malformed or empty.
    """

    name = "local"

    def __init__(self, documents: str | Path, *, max_results: int = 3) -> None:
        path = Path(documents).expanduser()
        if not path.exists():
            raise SearchError(f"local search: no document collection at {path}")
        self.path = path
        self.max_results = max_results
        key = (str(path.resolve()), _stamp(path))
        with _indexes_lock:
            index = _indexes.get(key)
            if index is None:
                index = _Index(_read_collection(path))
                _indexes[key] = index
        self._index = index

    def search(self, queries: Sequence[str]) -> list[list[SearchHit]]:
        """The best passages per query (empty when no word of it occurs)."""
        results = []
        for query in queries:
            hits = []
            for score, index in self._index.top(query, self.max_results):
                passage = self._index.passages[index]
                hits.append(SearchHit(passage.content, passage.title, passage.url, round(score, 4)))
            results.append(hits)
        return results
