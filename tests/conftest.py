"""Shared fixtures: real servers the tests start themselves.

- ``redis_server`` / ``redis_url``: a real redis-server on a free port (tests/_support/redis_server.py).
- ``local_llm``: a real llama-server with SmolLM2-135M-Instruct (tests/_support/llm.py).
"""

import os

import pytest
from _support.fleet import fleet
from _support.llm import local_llm
from _support.redis_server import redis_server, redis_url
from hypothesis import settings

__all__ = ["fleet", "local_llm", "redis_server", "redis_url"]

# Shared machines are slow and noisy: no per-example deadlines. In CI the examples
# are derived from the test (derandomized), so a run is reproducible; locally
# hypothesis explores freely.
settings.register_profile("verifleet", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI") else "verifleet")


# Tests marked source_build need llama-server compiled from llama.cpp's sources
# (10-12 minutes on two cores): they are deselected (not skipped) unless
# --source-build is given, as scripts/test-source-build.sh does. The default
# suite checks the source-build fallback against a stand-in for the cached build
# (tests/integration/test_localllm_runtime.py).
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--source-build",
        action="store_true",
        help="also select the tests marked source_build (they compile llama.cpp when "
        "no source build is cached)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--source-build"):
        return
    deselected = [item for item in items if item.get_closest_marker("source_build")]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not item.get_closest_marker("source_build")]
