"""The reward server's garbage collector, set for a long-lived process that
allocates a few hundred short-lived objects per request.

The server holds hundreds of thousands of long-lived objects once the
benchmark, the templates and the libraries are loaded, and every full
collection would walk them all (at times more CPU than the request's own).
"""

from __future__ import annotations

import gc

__all__ = ["GEN0_THRESHOLD", "settle_heap"]

#: Allocations between two young-generation collections (CPython's default is
#: 700: several collections per request).
GEN0_THRESHOLD = 10_000


def settle_heap() -> None:
    """Collect once, then move every object alive now out of the collector's
    reach (``gc.freeze``): what is loaded at start-up lives as long as the
    process, so later collections need not walk it. Call it once the service is
    built, just before serving; objects frozen are never freed, so not from a
    process that builds many services (tests). Never raises."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, middle, old)
