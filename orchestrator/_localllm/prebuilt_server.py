"""``python -m verifleet.orchestrator._localllm.prebuilt_server``: the prebuilt server.

Takes the ``llama-server`` options that :meth:`~.server.LocalLLMServer.command`
emits, starts llama.cpp's HTTP server from the ``xllamacpp`` extension with them
(it serves in threads of this process), and runs until SIGTERM, SIGINT or SIGHUP.
An option it does not know is an error (exit 2, argparse's message on stderr), not
silently dropped. A server that cannot start (a port in use, an unreadable model)
exits 1 after llama.cpp's own log lines, which say why (``couldn't bind ...``).
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence

__all__ = ["main"]

_STOP = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="prebuilt llama.cpp server",
        description="llama.cpp's server from the xllamacpp wheel, with llama-server's options",
    )
    parser.add_argument("--model", required=True)
    parser.add_argument("--alias", default=None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--ctx-size", type=int, default=0)
    parser.add_argument("--threads", type=int, default=-1)
    parser.add_argument("--threads-batch", type=int, default=-1)
    parser.add_argument("--cache-ram", type=int, default=None)
    parser.add_argument("--jinja", action="store_true")
    parser.add_argument("--no-webui", action="store_true")
    parser.add_argument("--metrics", action="store_true")
    parser.add_argument("--no-repack", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until a stop signal; see the module doc for the exit codes."""
    args = _parser().parse_args(argv)
    # Blocked before the server's threads exist, so they inherit the mask and the
    # stop signal reaches sigwait below instead of killing the process mid-reply.
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP)
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    if args.alias:
        params.model_alias = {args.alias}
    params.hostnames = [args.host]
    params.port = args.port
    params.n_parallel = args.parallel
    params.n_ctx = args.ctx_size
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads_batch
    if args.cache_ram is not None:
        params.cache_ram_mib = args.cache_ram
    params.use_jinja = args.jinja
    params.ui = not args.no_webui
    params.endpoint_metrics = args.metrics
    # llama-server's --no-repack sets exactly this field.
    params.no_extra_bufts = args.no_repack
    try:
        server = xllamacpp.Server(params)
    except RuntimeError as exc:
        print(f"prebuilt llama.cpp server: {exc}", file=sys.stderr, flush=True)
        return 1
    print(f"prebuilt llama.cpp server: listening on {server.listening_address}", flush=True)
    signal.sigwait(_STOP)
    del server  # stops the HTTP threads and frees the model before exit
    return 0


if __name__ == "__main__":
    sys.exit(main())
