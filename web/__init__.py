"""verifleet.web — the HTTP edge shared by the services verifleet serves (the
reward service and the results viewer): the ``Host`` check against DNS rebinding,
token auth, the body-size limit and the one loopback test behind the binding
rules. A refused request gets the same status and ``{"message": ...}`` body from
either service. Imports nothing of ours, so every layer that serves HTTP may use it.
"""

from ._guards import (
    LOOPBACK_NAMES,
    ASGIApp,
    BearerAuth,
    BodyLimit,
    HostCheck,
    Message,
    Receive,
    Scope,
    Send,
    bearer_token_ok,
    host_allowed,
    host_name,
    is_loopback,
    send_json_error,
)

__all__ = [
    "LOOPBACK_NAMES",
    "ASGIApp",
    "BearerAuth",
    "BodyLimit",
    "HostCheck",
    "Message",
    "Receive",
    "Scope",
    "Send",
    "bearer_token_ok",
    "host_allowed",
    "host_name",
    "is_loopback",
    "send_json_error",
]
