"""The search-provider interface deep judgment uses to check excerpts.

A provider takes a batch of queries (one per excerpt) and returns, per query, the
passages it found. :func:`search_function` turns a provider into the
``SearchFunction`` the hallucination assessment calls (one text block per query).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from verifleet.schemas import VerifleetError

__all__ = [
    "NO_RESULTS",
    "SearchError",
    "SearchHit",
    "SearchProvider",
    "render_hits",
    "search_function",
]

NO_RESULTS = "No search results found."


class SearchError(VerifleetError):
    """A search provider cannot be built (missing key or documents) or every query
    of a batch failed; the message says which provider and why (never the key)."""


@dataclass(frozen=True)
class SearchHit:
    """One passage a provider found: its text, and where it comes from."""

    content: str
    title: str | None = None
    url: str | None = None
    score: float | None = None


class SearchProvider(Protocol):
    """Finds passages for queries. Implementations: :class:`TavilySearch`
    (web, needs ``TAVILY_API_KEY``) and :class:`LocalSearch` (BM25 over local
    documents, offline)."""

    name: str

    def search(self, queries: Sequence[str]) -> list[list[SearchHit]]:
        """One list of hits per query, in order (empty: nothing found).

        Raises:
            SearchError: the provider cannot answer at all.
        """
        ...


def render_hits(hits: Sequence[SearchHit]) -> str:
    """Hits as the text block the hallucination judge reads."""
    if not hits:
        return NO_RESULTS
    blocks = []
    for number, hit in enumerate(hits, start=1):
        source = " ".join(part for part in (hit.title, f"({hit.url})" if hit.url else None) if part)
        blocks.append(
            f"[{number}] {source}\n{hit.content}" if source else f"[{number}] {hit.content}"
        )
    return "\n\n".join(blocks)


def search_function(provider: SearchProvider) -> _ProviderFunction:
    """``provider`` as a ``SearchFunction``: queries in, one text block each out."""
    return _ProviderFunction(provider)


class _ProviderFunction:
    def __init__(self, provider: SearchProvider) -> None:
        self.provider = provider

    def __call__(self, queries: Sequence[str]) -> list[str]:
        return [render_hits(hits) for hits in self.provider.search(list(queries))]

    def __repr__(self) -> str:
        return f"<search via {self.provider.name}>"
