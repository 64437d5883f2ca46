"""Search providers for deep judgment: Tavily's request building and error
handling, and offline BM25 search over local documents.

Tavily is exercised against a local stub HTTP server: the test machine has no
network (and no Tavily key), so a stub that answers like Tavily's ``/search``
endpoint, and returns 401/429/500 on demand, is the only way to check the real
HTTP requests and replies the provider handles.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from verifleet.pipeline import (
    LocalSearch,
    SearchError,
    TavilySearch,
    build_search_provider,
    search_function,
)
from verifleet.schemas import ConfigError, ModelConfig, VerificationConfig

KEY = "tvly-test-key-123"


@dataclass
class StubState:
    """What the stub answers per query, and every request it received."""

    replies: dict[str, list[tuple[int, Any, dict[str, str]]]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)


def _handler(state: StubState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(
                {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
            )
            queue = state.replies.get(body.get("query"), [])
            status, payload, headers = (
                queue.pop(0) if len(queue) > 1 else (queue[0] if queue else (200, {}, {}))
            )
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def stub() -> Iterator[tuple[str, StubState]]:
    state = StubState()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()


def _results(*contents: str) -> dict[str, Any]:
    return {
        "query": "q",
        "results": [
            {"title": f"T{i}", "url": f"https://ex.org/{i}", "content": c, "score": 0.9 - i / 10}
            for i, c in enumerate(contents)
        ],
    }


def test_tavily_builds_requests_and_reads_results(stub: tuple[str, StubState]) -> None:
    url, state = stub
    state.replies["BCL2 blocks apoptosis"] = [
        (200, _results("BCL2 inhibits apoptosis.", "", "It is anti-apoptotic."), {})
    ]
    tavily = TavilySearch(KEY, base_url=url, max_results=2, search_depth="advanced")
    [hits] = tavily.search(["BCL2 blocks apoptosis"])
    [request] = state.requests
    assert request["path"] == "/search"
    assert request["auth"] == f"Bearer {KEY}"
    assert request["body"] == {
        "query": "BCL2 blocks apoptosis",
        "max_results": 2,
        "search_depth": "advanced",
        "include_answer": False,
    }
    # The empty-content hit is dropped, as the original does; max_results cuts first.
    assert [(h.title, h.content, h.url) for h in hits] == [
        ("T0", "BCL2 inhibits apoptosis.", "https://ex.org/0")
    ]
    text = search_function(tavily)(["BCL2 blocks apoptosis"])
    assert text == ["[1] T0 (https://ex.org/0)\nBCL2 inhibits apoptosis."]


def test_tavily_retries_429_honouring_retry_after(stub: tuple[str, StubState]) -> None:
    url, state = stub
    state.replies["q"] = [
        (429, {"detail": "slow down"}, {"Retry-After": "7"}),
        (200, _results("x"), {}),
    ]
    sleeps: list[float] = []
    tavily = TavilySearch(KEY, base_url=url, sleep=sleeps.append, max_delay=5.0)
    [hits] = tavily.search(["q"])
    assert [h.content for h in hits] == ["x"]
    assert sleeps == [5.0]  # Retry-After 7, capped at max_delay
    assert len(state.requests) == 2


def test_one_failing_query_gets_no_hits_the_others_go_on(stub: tuple[str, StubState]) -> None:
    url, state = stub
    state.replies["bad"] = [(500, "oops", {})]
    state.replies["junk"] = [(200, "not json", {})]
    state.replies["good"] = [(200, _results("fine"), {})]
    tavily = TavilySearch(KEY, base_url=url, sleep=lambda _s: None, max_attempts=2)
    bad, junk, good = tavily.search(["bad", "junk", "good"])
    assert (bad, junk) == ([], [])
    assert [h.content for h in good] == ["fine"]
    assert len([r for r in state.requests if r["body"]["query"] == "bad"]) == 2


def test_every_query_failing_or_a_refused_key_is_an_error(stub: tuple[str, StubState]) -> None:
    url, state = stub
    state.replies["a"] = [(503, "down", {})]
    tavily = TavilySearch(KEY, base_url=url, sleep=lambda _s: None, max_attempts=1)
    with pytest.raises(SearchError, match="failed for all 1 queries"):
        tavily.search(["a"])
    state.replies["b"] = [(401, {"detail": "invalid key"}, {})]
    with pytest.raises(SearchError, match="refused the API key") as caught:
        tavily.search(["b"])
    assert KEY not in str(caught.value)


def test_tavily_without_a_key_says_how_to_get_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    with pytest.raises(SearchError, match="TAVILY_API_KEY"):
        TavilySearch()
    monkeypatch.setenv("TAVILY_API_KEY", KEY)
    assert TavilySearch().name == "tavily"


# --- local BM25 ---------------------------------------------------------------


def _docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / "genes").mkdir(parents=True)
    (folder / "genes" / "bcl2.md").write_text(
        "BCL2 is an anti-apoptotic protein encoded on chromosome 18.\n\n"
        "Overexpression of BCL2 is common in follicular lymphoma."
    )
    (folder / "tp53.txt").write_text("TP53 encodes p53, a tumour suppressor called the guardian.")
    (folder / "notes.csv").write_text("ignored,file")
    return folder


def test_local_search_ranks_passages_with_bm25(tmp_path: Path) -> None:
    search = LocalSearch(_docs(tmp_path), max_results=2)
    lymphoma, guardian, nothing = search.search(
        ["BCL2 in follicular lymphoma", "guardian tumour suppressor", "zebrafish"]
    )
    assert lymphoma[0].content == "Overexpression of BCL2 is common in follicular lymphoma."
    assert lymphoma[0].title == "bcl2"
    assert len(lymphoma) == 2 and lymphoma[1].content.startswith("BCL2 is an anti-apoptotic")
    assert [h.title for h in guardian] == ["tp53"]
    assert nothing == []


def test_local_search_reads_jsonl_and_reports_bad_collections(tmp_path: Path) -> None:
    records = tmp_path / "kb.jsonl"
    records.write_text(
        json.dumps(
            {
                "title": "Paris",
                "url": "https://ex.org/paris",
                "content": "Paris is the capital of France.",
            }
        )
        + "\n"
    )
    [[hit]] = LocalSearch(records).search(["capital of France"])
    assert (hit.title, hit.url) == ("Paris", "https://ex.org/paris")
    with pytest.raises(SearchError, match="no document collection"):
        LocalSearch(tmp_path / "absent")
    (tmp_path / "bad.jsonl").write_text("{oops\n")
    with pytest.raises(SearchError, match="line 1: not valid JSON"):
        LocalSearch(tmp_path / "bad.jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SearchError, match="empty"):
        LocalSearch(tmp_path / "empty")


def test_the_config_names_the_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    judge = ModelConfig(
        model_name="j", interface="openai_endpoint", endpoint_base_url="http://x/v1"
    )
    local = VerificationConfig(
        parsing_models=[judge],
        parsing_only=True,
        deep_judgment_enabled=True,
        deep_judgment_search_enabled=True,
        deep_judgment_search_tool="local",
        deep_judgment_search_documents=str(_docs(tmp_path)),
    )
    assert isinstance(build_search_provider(local), LocalSearch)
    monkeypatch.setenv("TAVILY_API_KEY", KEY)
    assert isinstance(build_search_provider(local, rubric=True), TavilySearch)
    with pytest.raises(ConfigError, match="needs a document collection"):
        VerificationConfig.build(
            parsing_models=[judge],
            parsing_only=True,
            deep_judgment_search_enabled=True,
            deep_judgment_search_tool="local",
        )
    with pytest.raises(ConfigError, match="unknown search tool 'bing'"):
        VerificationConfig.build(
            parsing_models=[judge], parsing_only=True, deep_judgment_search_tool="bing"
        )
