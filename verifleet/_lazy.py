"""Names a package loads on first use (PEP 562), so importing the package stays cheap:
``verifleet serve --help`` reads the reward service's defaults without FastAPI, and a
worker imports the scoring core without the service."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["exports", "type_checking_imports"]

# ``from MODULE import NAMES`` (or ``(NAMES)`` over several lines) in the block.
_IMPORT = re.compile(r"^\s+from ([.\w]+) import (?:\(([^)]*)\)|([^\n]+))", re.MULTILINE)


def type_checking_imports(path: str | Path) -> dict[str, str]:
    """``name -> module`` of the ``from MODULE import ...`` lines in the first
    ``if TYPE_CHECKING:`` block of the source file ``path`` ({} without one).

    Raises:
        OSError: the file cannot be read.
    """
    text = Path(path).read_text(encoding="utf-8")
    _, found, rest = text.partition("TYPE_CHECKING:\n")
    end = re.search(r"^\S", rest, re.MULTILINE)  # the block ends at the next unindented line
    block = rest[: end.start()] if found and end else rest
    names: dict[str, str] = {}
    for match in _IMPORT.finditer(block):
        listed = re.sub(r"#[^\n]*", "", match.group(2) or match.group(3))
        for name in re.findall(r"[A-Za-z_]\w*", listed):
            names[name] = match.group(1)
    return names


def exports(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's ``__getattr__`` and ``__dir__``: each name of its ``__all__``
    from the module its ``if TYPE_CHECKING:`` block imports it from
    (:func:`type_checking_imports`, read on first use), so that block is the one
    list of where the names live. A name found is kept in the package: later
    lookups skip ``__getattr__``. Its ``__getattr__`` raises AttributeError for any
    other name, and ImportError when the module cannot be imported."""
    module = sys.modules[package]
    table: list[dict[str, str]] = []

    def known() -> dict[str, str]:
        if not table:
            public = set(getattr(module, "__all__", ()))
            imports = type_checking_imports(str(module.__file__))
            table.append({name: where for name, where in imports.items() if name in public})
        return table[0]

    def getattr_(name: str) -> Any:
        where = known().get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where, package), name)
        setattr(module, name, value)
        return value

    def dir_() -> list[str]:
        return sorted(set(vars(module)) | set(known()))

    return getattr_, dir_
