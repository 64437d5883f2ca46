"""One asyncio event loop per process, in a daemon thread, that runs every agent.

The pipeline is synchronous and runs units on many threads; agents (langchain's
agent graph, MCP sessions) are asynchronous. Running them all on one loop keeps
the cached chat clients' async HTTP pools bound to a single loop (an httpx async
pool cannot be shared between loops) and lets many agents wait on their models
and tools at once without a thread each. Blocking work (entering an endpoint
gate) is pushed off the loop by the code that does it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Coroutine
from typing import TypeVar

from verifleet.schemas import VerifleetError

__all__ = ["AgentDeadlineError", "run_on_agent_loop"]

T = TypeVar("T")


class AgentDeadlineError(VerifleetError, TimeoutError):
    """An agent run was stopped at its deadline (the unit's, or an agentic trait's
    ``timeout_seconds``); its sessions were closed."""


_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _forget() -> None:
    # A forked child has no loop thread: start a new one on first use.
    global _loop
    _loop = None


os.register_at_fork(after_in_child=_forget)


def _agent_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="verifleet-agents", daemon=True)
            thread.start()
            _loop = loop
        return _loop


def run_on_agent_loop(coro: Coroutine[object, object, T], *, deadline: float | None) -> T:
    """Run ``coro`` on the process's agent loop and wait for its result.

    Args:
        coro: The agent run.
        deadline: ``time.monotonic()`` by which it must end; at the deadline the
            run is cancelled (its ``finally`` blocks close its MCP sessions) and
            :class:`TimeoutError` is raised.

    Raises:
        AgentDeadlineError: the deadline passed.
        Exception: whatever ``coro`` raised.
    """
    future = asyncio.run_coroutine_threadsafe(coro, _agent_loop())
    timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
    try:
        return future.result(timeout=timeout)
    except TimeoutError:
        if future.done():
            raise  # the run itself raised it
        future.cancel()
        # Let the cancellation unwind (sessions close) before the caller moves on.
        with contextlib.suppress(BaseException):
            future.result(timeout=10)
        raise AgentDeadlineError("the agent run was stopped at its deadline") from None
