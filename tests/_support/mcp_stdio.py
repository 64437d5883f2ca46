"""The test tools server (mcp_server.py) over stdio, for stdio MCP tests:
``python tests/_support/mcp_stdio.py``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _support.mcp_server import build_tools_server

if __name__ == "__main__":
    build_tools_server().run(transport="stdio")
