"""A lock one holder takes in Redis for a while (the queue feeder, the result drainer).

Taken with ``SET key token NX PX ms`` under a random token, so a holder that dies
frees it by expiry; released by a script that deletes the key only while it still
holds this holder's token, so a holder whose lock expired and was taken by
another never releases the other's.
"""

from __future__ import annotations

import secrets

import redis

__all__ = ["TokenLock"]

# KEYS: lock. ARGV: token. Release only a lock this holder still holds.
_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class TokenLock:
    """Expiring locks on one Redis client.

    Args:
        client: The Redis client the locks live on.
    """

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._unlock = client.register_script(_UNLOCK)

    def acquire(self, key: str, *, ms: int) -> str | None:
        """Take the lock ``key`` for at most ``ms`` milliseconds.

        Returns:
            The token to release it with, or None when another holder has it.

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        token = secrets.token_hex(8)
        return token if self.client.set(key, token, nx=True, px=ms) else None

    def release(self, key: str, token: str) -> None:
        """Release the lock ``key`` if it is still held under ``token`` (else nothing).

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        self._unlock(keys=[key], args=[token])
