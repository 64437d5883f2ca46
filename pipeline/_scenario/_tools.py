"""A node's MCP tool filter: the answering agent's tools for that turn.

The original framework documents ``tool_filter`` as removing MCP tools from the
answering model for one node (each entry a server, and optionally one of its
tools; no tool removes the whole server), saves it, and never applies it. Here it
is applied: whole servers leave the turn's ``mcp_urls_dict``; single tools leave
its ``mcp_tool_filter`` (the tools kept), computed from the server's real tool
list, which is read first, so a filter naming a server or tool that does not
exist fails the turn with the names that do.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from verifleet.schemas import ModelConfig, ToolFilter, VerifleetError

from .._agents import McpServerError
from .._agents._loop import run_on_agent_loop
from .._agents._servers import open_tools

__all__ = ["ToolFilterError", "filtered_model"]


class ToolFilterError(VerifleetError):
    """A node's tool filter names a server or tool its answering model lacks,
    or its servers cannot be listed."""


async def _tool_names(server: str, url: str, timeout: float) -> list[str]:
    async with AsyncExitStack() as stack:
        tools = await open_tools(stack, {server: url}, timeout=timeout)
        return [tool.name for tool in tools]


def filtered_model(
    model: ModelConfig,
    tool_filter: ToolFilter,
    node_id: str,
    *,
    timeout: float,
    deadline: float | None,
) -> ModelConfig:
    """``model`` without the tools ``tool_filter`` removes.

    Raises:
        ToolFilterError: a server the model does not have, a tool its server
            does not offer (the message lists what it offers), a server that
            cannot be reached to list its tools, or a filter leaving no tool.
    """
    servers = dict(model.mcp_urls_dict or {})
    where = f"node {node_id!r}: toolFilter"
    for entry in tool_filter.remove:
        if entry.server not in servers:
            raise ToolFilterError(
                f"{where} names MCP server {entry.server!r}, which the answering model "
                f"does not have (its servers: {sorted(servers) or 'none'})"
            )
    dropped = {e.server for e in tool_filter.remove if e.tool is None}
    removed = {(e.server, e.tool) for e in tool_filter.remove if e.tool is not None}
    kept_servers = {name: url for name, url in servers.items() if name not in dropped}
    if not kept_servers:
        raise ToolFilterError(f"{where} removes every MCP server of the answering model")
    if not removed:
        return model.model_copy(update={"mcp_urls_dict": kept_servers})
    keep: list[str] = []
    for name, url in sorted(kept_servers.items()):
        try:
            names = run_on_agent_loop(_tool_names(name, url, timeout), deadline=deadline)
        except McpServerError as exc:
            raise ToolFilterError(f"{where}: listing the tools: {exc}") from None
        for server, tool in sorted(removed):
            if server == name and tool not in names:
                raise ToolFilterError(
                    f"{where} removes tool {tool!r} of MCP server {name!r}, which offers "
                    f"no such tool (its tools: {sorted(names)})"
                )
        keep += [n for n in names if (name, n) not in removed]
    if model.mcp_tool_filter is not None:
        keep = [n for n in keep if n in model.mcp_tool_filter]
    if not keep:
        raise ToolFilterError(f"{where} leaves the answering model no tool")
    return model.model_copy(update={"mcp_urls_dict": kept_servers, "mcp_tool_filter": keep})
