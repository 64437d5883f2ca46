"""The reward service's limits and defaults, in a module that imports only
``typing``: ``verifleet serve --help`` shows them without loading the service."""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEFAULT_MAX_BATCH",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_INFLIGHT",
    "DEFAULT_REQUEST_TIMEOUT",
    "SERVED_FRESH_STATE",
]

#: A long agent trajectory is tens of kilobytes; 8 MiB leaves room without letting
#: one request hold the server's memory hostage.
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024

#: Seconds one ``/verify`` may take: a few judge calls with their retries. Longer
#: requests get 504 and their scoring is cancelled, so a stuck judge cannot pile
#: up requests.
DEFAULT_REQUEST_TIMEOUT = 300.0

#: Rollouts scored at once. Every admitted rollout takes turns on the one event
#: loop, so this bounds how long a loop turn (and a reply, a 503 or ``/health``
#: included) can wait; the rest are answered 503 at once. 512 keeps the judge
#: calls' default cap (256 per model) full with room for the sandbox steps: one
#: process scores a few hundred rollouts per second, so a larger limit only adds
#: queueing (judge calls then time out behind the backlog).
DEFAULT_MAX_INFLIGHT = 512

#: Rollouts one batch may carry: well under the default ``--max-inflight`` (a
#: batch is admitted whole or not at all); larger RL steps send several batches.
DEFAULT_MAX_BATCH = 256

#: The served benchmark's fresh state unless ``VERIFLEET_SANDBOX_FRESH`` says:
#: its templates compiled side by side in one template process per executor.
#: A process per question (the default of runs and jobs) pays a fork and a
#: compile per request once a benchmark has more questions than an executor
#: keeps processes (64): 132 against 603 verified/s and 9.0 against 0.2 ms of
#: sandbox CPU per request, 1,000 questions at 1,024 connections (the same at
#: 100 questions; bench/log/2026-11-29_per_question.md). Inline templates get
#: a process each either way.
SERVED_FRESH_STATE: Final = "job"
