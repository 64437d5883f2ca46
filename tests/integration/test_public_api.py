"""Each public subpackage's ``__all__`` names exactly what it exports."""

from __future__ import annotations

import importlib

import pytest

pytestmark = pytest.mark.integration

PACKAGES = [
    "verifleet",
    "verifleet.errors",
    "verifleet.schemas",
    "verifleet.pipeline",
    "verifleet.workers",
    "verifleet.orchestrator",
    "verifleet.store",
    "verifleet.reward",
    "verifleet.limits",
]


def test_the_orchestrator_package_loads_its_exports_on_first_use() -> None:
    # A fresh interpreter: importing the package must not import pyarrow or the
    # local-LLM builder; asking for a name loads just that name's submodule.
    import subprocess
    import sys

    code = (
        "import sys, verifleet.orchestrator as o\n"
        "assert 'pyarrow' not in sys.modules, 'pyarrow at import'\n"
        "assert 'verifleet.orchestrator._localllm' not in sys.modules\n"
        "o.read_results\n"
        "assert 'verifleet.results._export' in sys.modules\n"
        "assert 'verifleet.orchestrator._localllm' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_complete_and_resolvable(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert len(exported) == len(set(exported)), "duplicates in __all__"
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ names missing {attr}"
    public = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_")
        and not isinstance(value, type(importlib))
        and getattr(value, "__module__", name).startswith("verifleet")
        and attr not in {"annotations"}
    }
    assert public <= set(exported), f"{name} exposes names not in __all__: {public - set(exported)}"


def test_errors_share_one_base() -> None:
    errors = importlib.import_module("verifleet.errors")
    for attr in errors.__all__:
        assert issubclass(getattr(errors, attr), errors.VerifleetError)
