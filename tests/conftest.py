"""Shared fixtures: real servers the tests start themselves.

- ``redis_server`` / ``redis_url``: a real redis-server on a free port (tests/_support/redis_server.py).
- ``local_llm``: a real llama-server with SmolLM2-135M-Instruct (tests/_support/llm.py).
"""

import os

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
