"""Names a package loads on first use (PEP 562), so importing the package stays cheap:
``verifleet serve --help`` reads the reward service's defaults without FastAPI, and a
worker imports the scoring core without the service."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["exports"]


def exports(
    package: str, lazy: Mapping[str, str] | Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's ``__getattr__`` and ``__dir__``, given ``name -> module`` or the
    modules (relative to ``package``, or absolute) to look in, cheapest first, for a
    name of its ``__all__``. A name found is kept in the package: later lookups skip
    ``__getattr__``. Its ``__getattr__`` raises AttributeError for any other name,
    and ImportError when the module cannot be imported."""
    module = sys.modules[package]

    def known() -> Any:
        return lazy if isinstance(lazy, Mapping) else getattr(module, "__all__", ())

    def getattr_(name: str) -> Any:
        if name in known():
            for where in [lazy[name]] if isinstance(lazy, Mapping) else lazy:
                found = importlib.import_module(where, package)
                if hasattr(found, name):
                    setattr(module, name, getattr(found, name))
                    return getattr(found, name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def dir_() -> list[str]:
        return sorted(set(vars(module)) | set(known()))

    return getattr_, dir_
