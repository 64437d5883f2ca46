"""MCP servers of one agent run: which transport each address means, opening one
session per server (once per run) and loading its tools.

``mcp_urls_dict`` maps a server name to an address:

* ``http(s)://host/path``: streamable HTTP (the MCP default transport);
* ``http(s)://host/.../sse`` or ``sse+http(s)://host/path``: the older SSE transport;
* ``stdio:COMMAND ARGS...``: a local process speaking MCP on stdin/stdout. Such a
  server runs a command on the worker, so it is refused unless the operator set
  ``VERIFLEET_MCP_ALLOW_STDIO=1`` in the environment of the process that runs the
  unit (the CLI, or the workers).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from contextlib import AsyncExitStack
from urllib.parse import urlsplit

from langchain_core.tools import BaseTool

from verifleet.schemas import VerifleetError

__all__ = [
    "STDIO_ENV",
    "McpServerError",
    "connection_for",
    "open_tools",
]

#: Environment variable that allows ``stdio:`` MCP servers (``1``/``true``/``yes``).
STDIO_ENV = "VERIFLEET_MCP_ALLOW_STDIO"

_TRUE = {"1", "true", "yes", "on"}


class McpServerError(VerifleetError):
    """An MCP server of a model cannot be used: a malformed or refused address,
    or a server that cannot be reached or initialised. The unit that needed it
    fails with this message; nothing else does."""


def _stdio_allowed() -> bool:
    return os.environ.get(STDIO_ENV, "").strip().lower() in _TRUE


def connection_for(name: str, address: str, *, timeout: float) -> dict[str, object]:
    """The langchain-mcp-adapters connection of server ``name`` at ``address``.

    Args:
        name: The server's name (a key of ``mcp_urls_dict``).
        address: Its address (see the module docstring for the forms).
        timeout: Seconds an HTTP request to the server may take (connect and read).

    Raises:
        McpServerError: the address has no known form, or is a ``stdio:`` server
            while the operator did not allow them.
    """
    text = address.strip()
    if text.startswith("stdio:"):
        if not _stdio_allowed():
            raise McpServerError(
                f"MCP server '{name}' is a stdio command, which runs on the worker; "
                f"the operator must allow it with {STDIO_ENV}=1"
            )
        argv = shlex.split(text[len("stdio:") :])
        if not argv:
            raise McpServerError(f"MCP server '{name}': 'stdio:' needs a command")
        return {"transport": "stdio", "command": argv[0], "args": argv[1:]}
    transport = "streamable_http"
    if text.startswith(("sse+http://", "sse+https://")):
        transport, text = "sse", text[len("sse+") :]
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise McpServerError(
            f"MCP server '{name}': address {address!r} is not an http(s) URL "
            "or a 'stdio:COMMAND' (see the agent docs)"
        )
    if parts.path.rstrip("/").endswith("/sse"):
        transport = "sse"
    return {"transport": transport, "url": text, "timeout": timeout, "sse_read_timeout": timeout}


def _root_cause(exc: BaseException) -> BaseException:
    # anyio task groups wrap the real failure (a refused connection, an HTTP
    # error) in nested exception groups; the innermost first one says what.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe_server_error(exc: BaseException) -> str:
    """A one-line cause of a failed MCP call or connection."""
    cause = _root_cause(exc)
    text = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {text[0]}" if text else type(cause).__name__


async def open_tools(
    stack: AsyncExitStack,
    servers: dict[str, str],
    *,
    timeout: float,
    tool_filter: Sequence[str] | None = None,
) -> list[BaseTool]:
    """Open one session per server on ``stack`` and return their tools.

    The sessions stay open until ``stack`` closes (the caller closes it on every
    path, which ends the sessions and stops ``stdio`` processes). Tools named the
    same on two servers are an error: the model could not tell them apart.

    Args:
        stack: Owns the sessions.
        servers: ``{name: address}`` (``mcp_urls_dict``).
        timeout: HTTP timeout per request to a server.
        tool_filter: Tool names to keep (None: all).

    Raises:
        McpServerError: an address is refused or malformed, a server cannot be
            reached or initialised, or two servers offer a tool of the same name,
            or the filter leaves no tool.
    """
    # Imported here: importing the pipeline must not pay for the MCP stack.
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools

    connections = {
        name: connection_for(name, url, timeout=timeout) for name, url in servers.items()
    }
    client = MultiServerMCPClient(connections)  # type: ignore[arg-type]
    tools: list[BaseTool] = []
    seen: dict[str, str] = {}
    for name in sorted(connections):
        where = connections[name].get("url") or connections[name].get("command")
        try:
            session = await stack.enter_async_context(client.session(name))
            loaded = await load_mcp_tools(session, server_name=name)
        except Exception as exc:
            raise McpServerError(
                f"MCP server '{name}' ({where}) cannot be used: {describe_server_error(exc)}"
            ) from exc
        for tool in loaded:
            if tool_filter is not None and tool.name not in tool_filter:
                continue
            if tool.name in seen:
                raise McpServerError(
                    f"MCP servers '{seen[tool.name]}' and '{name}' both offer a tool "
                    f"named '{tool.name}'"
                )
            seen[tool.name] = name
            tools.append(tool)
    if not tools:
        raise McpServerError(
            f"MCP servers {sorted(servers)} offer no tool"
            + (f" named in mcp_tool_filter {list(tool_filter)}" if tool_filter else "")
        )
    return tools
