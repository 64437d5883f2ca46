"""Names a package loads on first use (PEP 562), so importing the package stays cheap.

A package lists ``name -> module`` and defines its ``__getattr__`` and ``__dir__``
through :func:`load` and :func:`names`: ``verifleet serve --help`` imports the
reward service's defaults without FastAPI, and a worker imports the scoring core
without the service.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["load", "names"]


def load(package: str, lazy: Mapping[str, str], name: str) -> Any:
    """Import ``name`` from its module (relative to ``package``, or absolute) and
    keep it in the package, so later lookups skip ``__getattr__``.

    Raises:
        AttributeError: ``name`` is not one of the package's lazy names.
        ImportError: its module cannot be imported.
    """
    module = lazy.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, package), name)
    setattr(sys.modules[package], name, value)
    return value


def names(package: str, lazy: Mapping[str, str]) -> list[str]:
    """The package's ``dir()``: what it holds now and what it would load."""
    return sorted(set(vars(sys.modules[package])) | set(lazy))
