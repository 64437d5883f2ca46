"""Packages whose names load on first use take each from the module their
``if TYPE_CHECKING:`` block imports it from (``verifleet._lazy``): the block is
the one list, and every name of ``__all__`` must resolve to that module's object."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from verifleet import _lazy

PACKAGES = [
    "verifleet.limits",
    "verifleet.orchestrator",
    "verifleet.pipeline",
    "verifleet.pipeline._agents",
    "verifleet.pipeline._checks",
    "verifleet.pipeline._llm",
    "verifleet.pipeline._scenario",
    "verifleet.results",
    "verifleet.results.stats",
    "verifleet.reward",
    "verifleet.reward.serve",
    "verifleet.sandbox",
    "verifleet.store",
]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_comes_from_the_module_the_block_names(package: str) -> None:
    module = importlib.import_module(package)
    places = _lazy.type_checking_imports(str(module.__file__))
    assert set(module.__all__) <= set(places) | set(vars(module)), "a name with no place"
    for name in module.__all__:
        if name in places:
            source = importlib.import_module(places[name], package)
            assert getattr(module, name) is getattr(source, name), name
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        module.not_a_name  # noqa: B018


def test_the_block_is_read_across_lines_and_without_comments(tmp_path: Path) -> None:
    source = tmp_path / "pkg.py"
    source.write_text(
        "import typing\n"
        "if typing.TYPE_CHECKING:\n"
        "    from ._a import One, two  # a comment naming Three\n"
        "    from verifleet.b import (\n"
        "        Four,  # Five\n"
        "        six,\n"
        "    )\n"
        "from ._c import seven\n"
    )
    assert _lazy.type_checking_imports(source) == {
        "One": "._a",
        "two": "._a",
        "Four": "verifleet.b",
        "six": "verifleet.b",
    }
