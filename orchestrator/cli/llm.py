"""``verifleet llm``: build and serve the bundled local model.

``verifleet llm build`` compiles llama.cpp's ``llama-server`` once from the pinned
source distribution into the user's cache directory (about 10–12 minutes on two
cores); ``verifleet llm serve`` starts it with SmolLM2-135M-Instruct on 127.0.0.1
and prints the model spec to pass to ``--answering`` / ``--parsing``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add the ``llm`` sub-command group."""
    parser = commands.add_parser(
        "llm",
        help="build or serve the bundled local model",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="llm_action", metavar="ACTION", required=True)
    build = actions.add_parser("build", help="build llama-server (cached; a no-op when built)")
    build.set_defaults(handler=_build)
    serve = actions.add_parser("serve", help="serve the local model until interrupted")
    serve.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: free)")
    serve.set_defaults(handler=_serve)


def _build(_args: argparse.Namespace) -> int:
    from verifleet.orchestrator import ensure_llama_server

    print(ensure_llama_server())
    return 0


def _serve(args: argparse.Namespace) -> int:
    from verifleet.orchestrator import LocalLLMServer

    with LocalLLMServer(port=args.port or None) as server:
        print(f"serving {server.model_name} at {server.base_url}")
        print(f"model spec: {server.spec}")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0
