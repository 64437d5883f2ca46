"""The package layout as pyproject.toml declares it."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["ROOT", "package_dirs"]


def package_dirs() -> dict[str, str]:
    """pyproject.toml's package-dir table: import name -> folder."""
    with (ROOT / "pyproject.toml").open("rb") as handle:
        mapping: dict[str, str] = tomllib.load(handle)["tool"]["setuptools"]["package-dir"]
    return mapping
