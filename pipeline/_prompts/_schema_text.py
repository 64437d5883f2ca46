"""A JSON schema as prompts show it (indented, keys sorted), computed once per schema.

``json.dumps`` with ``indent`` runs in pure Python: for a template's schema it
cost more than the rest of building a parsing prompt, on every call of every
unit. The compact dump (in C) is the cache key.
"""

from __future__ import annotations

import json
import threading

__all__ = ["schema_text"]

_MAX = 4096
_CACHE: dict[str, str] = {}
_LOCK = threading.Lock()


def schema_text(schema: object) -> str:
    """``json.dumps(schema, indent=2, sort_keys=True)``, remembered (at most
    4,096 distinct schemas; the oldest is dropped first)."""
    key = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    text = _CACHE.get(key)
    if text is None:
        text = json.dumps(schema, indent=2, sort_keys=True)
        with _LOCK:
            if len(_CACHE) >= _MAX:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[key] = text
    return text
