"""``GET /health`` and ``GET /ready`` on a port of their own (``--health-port``).

On the service's port a probe waits in the kernel's accept queue behind every
connection that arrived before it: when an RL trainer opens 16,000 at once, the
server accepts (and refuses or admits) thousands before it reads the probe,
however fast it answers once it does. A load balancer needs the answer exactly then. This listener has
its own socket, so its own queue, and its own thread: the event loop's Python
code hands the interpreter over at least every 5 ms (``sys.getswitchinterval``),
so a probe is answered within a few milliseconds whatever the loop is doing.

It answers what the service's own ``/health`` answers without a token (status
and version: nothing a rebinding page could use) and its ``/ready``; anything
else gets 404. With ``--workers N`` every process listens on the port
(``SO_REUSEPORT``): a probe is answered by one of them, for itself.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from verifleet._version import __version__

from ._admission import Admission

__all__ = ["HealthListener"]


class _Server(HTTPServer):
    allow_reuse_address = True

    def server_bind(self) -> None:
        # Every --workers process binds the same port: the kernel spreads probes.
        if hasattr(socket, "SO_REUSEPORT"):
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()


class HealthListener:
    """A daemon thread answering ``/health`` and ``/ready`` on ``host:port``.

    Args:
        host: Address to bind (the service's own).
        port: Port to bind.
        admission: The process's admission counter (read for ``/ready``).

    Raises:
        OSError: (from :meth:`start`) the port cannot be bound.
    """

    def __init__(self, host: str, port: int, admission: Admission) -> None:
        self.host = host
        self.port = port
        self.admission = admission
        self._server: HTTPServer | None = None

    def start(self) -> None:
        """Bind and start answering (in a daemon thread)."""
        admission = self.admission

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                headers: dict[str, str] = {}
                payload: dict[str, object]
                if path == "/health":
                    status, payload = 200, {"status": "ok", "version": __version__}
                elif path == "/ready":
                    status, payload, headers = admission.readiness()
                else:
                    status, payload = 404, {"message": f"{path} is not served on this port"}
                self._reply(status, payload, headers)

            def _reply(self, status: int, payload: object, headers: dict[str, str]) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                """Probes are not logged (one every few seconds per balancer)."""

        self._server = _Server((self.host, self.port), Handler)
        thread = threading.Thread(
            target=self._server.serve_forever, name="verifleet-health", daemon=True
        )
        thread.start()

    def stop(self) -> None:
        """Stop answering and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
