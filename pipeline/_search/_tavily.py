"""Tavily web search, the original framework's search tool, over its HTTP API.

One ``POST {base_url}/search`` per query with the key as a bearer token. Like the
original, a query that fails (timeout, 5xx after retries, a malformed reply) gets
no hits and a warning, so one bad query does not sink the others; a refused key
(401/403) or a batch where every query failed raises :class:`SearchError`.
429 and 5xx replies are retried, honouring ``Retry-After`` up to ``max_delay``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence

import httpx

from ._provider import SearchError, SearchHit

__all__ = ["TAVILY_URL", "TavilySearch"]

log = logging.getLogger(__name__)

TAVILY_URL = "https://api.tavily.com"
_RETRIED = {429, 500, 502, 503, 504}


class _QueryFailed(SearchError):
    """One query got no usable reply (caught inside the batch, which goes on)."""


class TavilySearch:
    """Search the web through Tavily.

    Args:
        api_key: The key; ``TAVILY_API_KEY`` when None.
        max_results: Hits per query (Tavily's ``max_results``).
        search_depth: ``"basic"`` or ``"advanced"``.
        base_url: The API root (a local stub in tests).
        timeout: Seconds per request.
        max_attempts: Tries per query on 429/5xx/connection errors.
        max_delay: Longest wait between tries, whatever ``Retry-After`` says.
        sleep: The wait between tries (tests record it instead).

    Raises:
        SearchError: no key given and ``TAVILY_API_KEY`` is not set.
    """

    name = "tavily"

    def __init__(
        self,
        api_key: str | None = None,
        *,
        max_results: int = 3,
        search_depth: str = "basic",
        base_url: str = TAVILY_URL,
        timeout: float = 30.0,
        max_attempts: int = 3,
        max_delay: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        key = api_key or os.environ.get("TAVILY_API_KEY")
        if not key:
            raise SearchError(
                "tavily search needs an API key: set TAVILY_API_KEY (https://tavily.com), "
                "or use the offline provider (deep_judgment_search_tool: local)"
            )
        self._key = key
        self.max_results = max_results
        self.search_depth = search_depth
        self.url = base_url.rstrip("/") + "/search"
        self.timeout = timeout
        self.max_attempts = max(1, max_attempts)
        self.max_delay = max_delay
        self._sleep = sleep

    def request_body(self, query: str) -> dict[str, object]:
        """The JSON body sent for ``query`` (the key travels in a header only)."""
        return {
            "query": query,
            "max_results": self.max_results,
            "search_depth": self.search_depth,
            "include_answer": False,
        }

    def search(self, queries: Sequence[str]) -> list[list[SearchHit]]:
        """One list of hits per query.

        Raises:
            SearchError: the key was refused, or every query failed.
        """
        results: list[list[SearchHit]] = []
        failures = 0
        with httpx.Client(timeout=self.timeout) as client:
            for query in queries:
                try:
                    results.append(self._one(client, query))
                except _QueryFailed as exc:
                    failures += 1
                    log.warning("tavily search failed for %r: %s", query[:60], exc)
                    results.append([])
        if queries and failures == len(queries):
            raise SearchError(f"tavily search failed for all {failures} queries (see the log)")
        return results

    def _one(self, client: httpx.Client, query: str) -> list[SearchHit]:
        headers = {"Authorization": f"Bearer {self._key}"}
        for attempt in range(1, self.max_attempts + 1):
            try:
                reply = client.post(self.url, json=self.request_body(query), headers=headers)
            except httpx.HTTPError as exc:
                if attempt == self.max_attempts:
                    raise _QueryFailed(f"{type(exc).__name__}: {exc}") from exc
                self._sleep(min(self.max_delay, 2.0 ** (attempt - 1)))
                continue
            if reply.status_code in (401, 403):
                raise SearchError(f"tavily refused the API key ({reply.status_code})")
            if reply.status_code in _RETRIED and attempt < self.max_attempts:
                self._sleep(self._delay(reply, attempt))
                continue
            if reply.status_code != 200:
                raise _QueryFailed(f"HTTP {reply.status_code}")
            return self._hits(reply)
        raise _QueryFailed("no attempt left")  # pragma: no cover - the loop returns or raises

    def _delay(self, reply: httpx.Response, attempt: int) -> float:
        header = reply.headers.get("retry-after", "")
        try:
            wanted = float(header)
        except ValueError:
            wanted = 2.0 ** (attempt - 1)
        return max(0.0, min(self.max_delay, wanted))

    def _hits(self, reply: httpx.Response) -> list[SearchHit]:
        try:
            data = reply.json()
        except ValueError as exc:
            raise _QueryFailed("the reply is not JSON") from exc
        items = data.get("results") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise _QueryFailed("the reply has no 'results' list")
        hits = []
        for item in items[: self.max_results]:
            if not isinstance(item, dict):
                continue
            content = item.get("content")
            if not isinstance(content, str) or not content.strip():
                continue  # as the original: a hit without content says nothing
            score = item.get("score")
            hits.append(
                SearchHit(
                    content=content.strip(),
                    title=item.get("title") or None,
                    url=item.get("url") or None,
                    score=float(score) if isinstance(score, int | float) else None,
                )
            )
        return hits
