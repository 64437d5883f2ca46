"""The folder-per-subpackage layout is declared once, in pyproject.toml's package-dir;
these tests keep the other places that must follow it in step."""

from __future__ import annotations

import tomllib

import pytest
from _support.layout import ROOT, package_dirs

pytestmark = pytest.mark.integration


def test_every_subpackage_is_type_checked() -> None:
    # mypy cannot follow setuptools' editable-install finder; it reads the package
    # through the .typecheck/ link farm, and silently skips a folder missing there.
    farm = ROOT / ".typecheck" / "verifleet"
    for name, folder in package_dirs().items():
        if name == "verifleet":
            continue
        link = farm / name.split(".", 1)[1]
        assert link.is_symlink(), f".typecheck/verifleet lacks a link for {name}"
        assert link.resolve() == (ROOT / folder).resolve()


def test_every_subpackage_is_under_an_import_contract() -> None:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        contracts = tomllib.load(handle)["tool"]["importlinter"]["contracts"]
    # forbidden contracts name source and forbidden modules, layers contracts their layers
    named = {
        m
        for c in contracts
        for m in c.get("source_modules", []) + c.get("forbidden_modules", []) + c.get("layers", [])
    }
    for name in package_dirs():
        if name != "verifleet":
            assert name in named, f"{name} appears in no import contract"


def test_a_sandbox_executor_loads_no_dataframe_or_fleet_libraries() -> None:
    # Every worker process keeps executors warm: what they import is paid in memory
    # and start-up per executor. Data frames are built lazily by the result views.
    import subprocess
    import sys

    code = (
        "import sys, verifleet.sandbox._runtime\n"
        "heavy = {'pandas', 'pyarrow', 'celery', 'redis', 'langchain', 'httpx', 'fastapi'}\n"
        "loaded = sorted(heavy & set(sys.modules))\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
