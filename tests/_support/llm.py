"""A real local model for tests: llama-server with SmolLM2-135M-Instruct.

One server per test session (the model loads in about a second; the runtime is
the prebuilt server, checked by ``verifleet llm build`` ahead of the test run, or
where that cannot run the source build it compiles once). It binds a free port on 127.0.0.1 and stops with the session.
Register it in ``tests/conftest.py`` with ``from _support.llm import local_llm``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from verifleet.orchestrator import LocalLLMServer


@pytest.fixture(scope="session")
def local_llm() -> Iterator[LocalLLMServer]:
    """The running server: ``.base_url``, ``.model_name``, ``.spec`` for the CLI."""
    with LocalLLMServer() as server:
        yield server
