"""Search providers for deep judgment's hallucination check (template and rubric).

``tavily`` searches the web (the original framework's tool; needs
``TAVILY_API_KEY``); ``local`` searches a local document collection with BM25,
offline. :func:`build_search_provider` makes one from a run's configuration.
"""

from __future__ import annotations

from verifleet.schemas import VerificationConfig

from ._local import LocalSearch
from ._provider import (
    NO_RESULTS,
    SearchError,
    SearchHit,
    SearchProvider,
    render_hits,
    search_function,
)
from ._tavily import TAVILY_URL, TavilySearch

__all__ = [
    "NO_RESULTS",
    "SEARCH_TOOLS",
    "TAVILY_URL",
    "LocalSearch",
    "SearchError",
    "SearchHit",
    "SearchProvider",
    "TavilySearch",
    "build_search_provider",
    "render_hits",
    "search_function",
]

SEARCH_TOOLS = ("tavily", "local")


def build_search_provider(config: VerificationConfig, *, rubric: bool = False) -> SearchProvider:
    """The provider ``config`` names for template (``deep_judgment_search_tool``)
    or rubric (``deep_judgment_rubric_search_tool``) deep judgment.

    Raises:
        SearchError: an unknown tool, Tavily without ``TAVILY_API_KEY``, or a
            local collection that is missing, malformed or empty.
    """
    tool = config.deep_judgment_rubric_search_tool if rubric else config.deep_judgment_search_tool
    tool = tool.strip().lower()
    limit = config.deep_judgment_search_max_results
    if tool == "tavily":
        return TavilySearch(
            max_results=limit, base_url=config.deep_judgment_search_url or TAVILY_URL
        )
    if tool == "local":
        if not config.deep_judgment_search_documents:
            raise SearchError(
                "local search needs deep_judgment_search_documents (a folder of .txt/.md "
                "files or a .jsonl file)"
            )
        return LocalSearch(config.deep_judgment_search_documents, max_results=limit)
    raise SearchError(f"unknown search tool {tool!r} (known: {', '.join(SEARCH_TOOLS)})")
