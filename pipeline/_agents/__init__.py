"""The built-in agent runtime: MCP tool-using answering models and the agents that
investigate agentic rubric traits.

:class:`McpAgentRunner` is the default ``PipelineResources.agent``: a unit whose
answering model has ``mcp_urls_dict`` is answered by a langchain agent
(``langchain.agents.create_agent``) over the model's chat client with the tools of
its MCP servers (``langchain-mcp-adapters`` over the official ``mcp`` SDK). The
agent's model calls go through the endpoint gate, the retry policy and the unit's
usage tracker like plain calls; its trace, turn-limit flag and ``agent_metrics``
go into the result.
"""

from __future__ import annotations

import typing

from verifleet import _lazy

if typing.TYPE_CHECKING:
    from ._loop import AgentDeadlineError
    from ._convert import ERROR_PATTERN, agent_metrics, trace_of
    from ._runtime import TOOL_TIMEOUT_ENV, AgentRun, McpAgentRunner, tool_timeout
    from ._servers import STDIO_ENV, McpServerError, connection_for

__all__ = [
    "ERROR_PATTERN",
    "STDIO_ENV",
    "TOOL_TIMEOUT_ENV",
    "AgentDeadlineError",
    "AgentRun",
    "McpAgentRunner",
    "McpServerError",
    "agent_metrics",
    "connection_for",
    "tool_timeout",
    "trace_of",
]


# Each name of __all__ loads on first use, from the module the TYPE_CHECKING block
# imports it from: langchain's agents are imported by the first agent run.
__getattr__, __dir__ = _lazy.exports(__name__)
