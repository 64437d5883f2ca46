#!/usr/bin/env bash
# The agent demo: an MCP server (server.py) and the scripted tool-calling endpoint
# start in the background, verifleet verifies benchmark.yaml with an agent that
# calls the tools, and the servers stop again. Writes agent-results.parquet and
# prints each question's verdict, tool calls and agent metrics.
# Uses ports 7401 (endpoint) and 7402 (MCP server) on 127.0.0.1; see config.yaml.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=.venv/bin/python
"$PY" tests/_support/agent_endpoint.py --port 7401 & endpoint=$!
"$PY" examples/agent/server.py --port 7402 >/dev/null 2>&1 & mcp=$!
trap 'kill "$endpoint" "$mcp" 2>/dev/null || true' EXIT
# Wait until both accept connections.
for _ in $(seq 100); do
    if "$PY" - <<'PY' 2>/dev/null
import socket
for port in (7401, 7402):
    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
PY
    then break; fi
    sleep 0.1
done
.venv/bin/verifleet run examples/agent/benchmark.yaml --config examples/agent/config.yaml \
    --out agent-results.parquet
"$PY" - <<'PY'
from verifleet.orchestrator import read_results

for r in read_results("agent-results.parquet"):
    t = r.template
    calls = [c["name"] for m in t.trace_messages for c in m.get("tool_calls") or []]
    print(f"{r.metadata.question_id:15} verify={t.verify_result!s:5} "
          f"recursion_limit={t.recursion_limit_reached!s:5} tool calls={calls}")
    print(f"{'':15} agent_metrics={t.agent_metrics}")
    if r.rubric and r.rubric.agentic_trait_scores:
        print(f"{'':15} agentic traits={r.rubric.agentic_trait_scores}")
PY
