"""A tiny MCP server for the agent demo: two lab-notebook tools over streamable HTTP.

    python examples/agent/server.py --port 7402     # serves http://127.0.0.1:7402/mcp

Built with the official MCP SDK's FastMCP; any MCP server works the same way.
"""

from __future__ import annotations

import argparse

from mcp.server.fastmcp import FastMCP

#: Protein lengths (amino acids) the notebook knows.
LENGTHS = {"BCL2": 239, "TP53": 393, "KRAS": 189}


def build(port: int) -> FastMCP:
    """The server, listening on 127.0.0.1:``port``."""
    server = FastMCP("lab-notebook", host="127.0.0.1", port=port, stateless_http=True)

    @server.tool()
    def protein_length(gene: str) -> str:
        """Length in amino acids of the protein a human gene encodes."""
        length = LENGTHS.get(gene.strip().upper())
        return str(length) if length is not None else f"error: gene {gene} not found"

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description="The agent demo's MCP server.")
    parser.add_argument("--port", type=int, default=7402)
    build(parser.parse_args().port).run(transport="streamable-http")


if __name__ == "__main__":
    main()
