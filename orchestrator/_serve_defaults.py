"""The reward service's limits, in a module that imports nothing: ``verifleet
serve --help`` shows them without loading the service."""

from __future__ import annotations

__all__ = [
    "DEFAULT_MAX_BATCH",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_INFLIGHT",
    "DEFAULT_REQUEST_TIMEOUT",
]

#: A long agent trajectory is tens of kilobytes; 8 MiB leaves room without letting
#: one request hold the server's memory hostage.
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024

#: Seconds one ``/verify`` may take: a few judge calls with their retries. Longer
#: requests get 504 and their scoring is cancelled, so a stuck judge cannot pile
#: up requests.
DEFAULT_REQUEST_TIMEOUT = 300.0

#: Rollouts scored at once. Each costs a few kilobytes and, with a judge, one open
#: judge connection; 4,096 keeps a 50 ms judge busy far beyond what one server
#: process scores per second, and answers the rest 503 at once.
DEFAULT_MAX_INFLIGHT = 4096

#: Rollouts one batch may carry: a typical RL step's batch, well under the
#: default ``--max-inflight`` (a batch is admitted whole or not at all).
DEFAULT_MAX_BATCH = 1024
