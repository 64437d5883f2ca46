"""Package list for the folder-per-subpackage layout.

pyproject.toml maps each top-level folder into the ``verifleet`` namespace with
``package-dir``; setuptools cannot discover nested packages under such a mapping,
so they are listed here from the ``__init__.py`` files on disk. The mapping itself
is read from pyproject.toml, so a new top-level package is declared in one place.
"""

import tomllib
from pathlib import Path

from setuptools import setup

with open("pyproject.toml", "rb") as handle:
    ROOTS: dict[str, str] = tomllib.load(handle)["tool"]["setuptools"]["package-dir"]


def _packages() -> list[str]:
    found = []
    for name, folder in ROOTS.items():
        for init in sorted(Path(folder).rglob("__init__.py")):
            rel = init.parent.relative_to(folder).parts
            found.append(".".join((name, *rel)))
    return found


setup(packages=_packages())
