"""A real MCP server for agent tests: the official SDK's FastMCP over streamable
HTTP on a free loopback port, served from a thread of the test process."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from mcp.server.fastmcp import FastMCP

from .asgi_thread import ServedApp, serve_in_thread

__all__ = ["GENES", "McpServer", "build_tools_server", "mcp_server"]

#: What the ``gene_length`` tool knows (amino acids).
GENES = {"BCL2": 239, "TP53": 393}


def build_tools_server() -> FastMCP:
    """A FastMCP server with a few tools: ``add``, ``gene_length`` (an error text
    for unknown genes) and ``sleep`` (to test tool timeouts)."""
    server = FastMCP("verifleet-test-tools", stateless_http=True)

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def gene_length(gene: str) -> str:
        """Length in amino acids of a human protein, by gene symbol."""
        if gene.upper() not in GENES:
            return f"error: gene {gene} not found"
        return str(GENES[gene.upper()])

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Wait, then say so."""
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    return server


class McpServer:
    """A served tools server."""

    def __init__(self, served: ServedApp) -> None:
        self.served = served

    @property
    def url(self) -> str:
        """The streamable HTTP address (``.../mcp``)."""
        return f"{self.served.url}/mcp"


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[McpServer]:
    """The tools server, started once per test module."""
    served = serve_in_thread(build_tools_server().streamable_http_app())
    try:
        yield McpServer(served)
    finally:
        served.stop()
