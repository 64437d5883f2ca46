"""Shared fixtures: real servers the tests start themselves.

- ``redis_server`` / ``redis_url``: a real redis-server on a free port (tests/_support/redis_server.py).
- ``local_llm``: a real llama-server with SmolLM2-135M-Instruct (tests/_support/llm.py).
"""

from _support.fleet import fleet
from _support.llm import local_llm
from _support.redis_server import redis_server, redis_url

__all__ = ["fleet", "local_llm", "redis_server", "redis_url"]
