"""Which credential a model call is made with, as a keyed hash: what the call
caches put in their keys so that two jobs whose keys differ never share a reply.

Behind one gateway, two API keys may reach different backends (LiteLLM virtual
keys, Azure deployments, per-tenant fine-tunes), so a reply obtained with one
key says nothing about what another key would get. The identity is an
HMAC-SHA256 of the key's *value* (never the key, never only its variable's name:
two jobs may name the same variable on different machines, or different
variables holding the same key), under ``VERIFLEET_CACHE_KEY_SECRET`` when the
operator sets one (set it on every process of a fleet, or they stop sharing
entries: misses, never wrong replies) and a fixed, verifleet-specific key
otherwise. Nothing that reads the cache can recover the key from it.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from verifleet.schemas import ModelConfig

from .._llm_protocol import ModelCallError
from ._clients import _PROVIDER_KEY_ENV, resolve_api_key

__all__ = ["CACHE_KEY_SECRET_ENV", "credential_identity"]

#: The environment variable that may hold the fleet's secret for the HMAC.
CACHE_KEY_SECRET_ENV = "VERIFLEET_CACHE_KEY_SECRET"

_DEFAULT_SECRET = b"verifleet call-cache credential identity v1"


def credential_identity(model: ModelConfig) -> str:
    """A hex HMAC-SHA256 of the API key ``model`` is called with in this process
    (the key :func:`resolve_api_key` sends, else the provider SDK's variable);
    ``""`` when it has none.

    Never raises: a key that cannot be resolved (its variable unset) is no
    credential (the call itself then fails with the error that names it).
    """
    try:
        value = resolve_api_key(model)
    except ModelCallError:
        value = None
    if value is None:
        env = _PROVIDER_KEY_ENV.get((model.model_provider or "").lower())
        value = os.environ.get(env, "").strip() if env else ""
    if not value:
        return ""
    secret = os.environ.get(CACHE_KEY_SECRET_ENV, "").encode() or _DEFAULT_SECRET
    return hmac.new(secret, value.encode(), hashlib.sha256).hexdigest()
