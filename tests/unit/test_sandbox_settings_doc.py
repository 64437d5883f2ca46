"""The sandbox's settings are described once, in docs/security.md: every variable listed."""

from __future__ import annotations

import re
from pathlib import Path

from verifleet.sandbox import _bytecode, _identity, _settings

_DOCS = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def test_every_sandbox_variable_read_is_in_the_settings_table() -> None:
    rows = set(re.findall(r"^\| `(VERIFLEET_[A-Z_]+)` \|", _DOCS.read_text(), re.MULTILINE))
    read = set()
    for module in (_settings, _bytecode, _identity):
        read |= set(re.findall(r'"(VERIFLEET_SANDBOX[A-Z_]*)"', Path(module.__file__).read_text()))
    assert len(read) >= 8, read  # the scan itself found the variables
    assert read <= rows, f"not in docs/security.md's settings table: {sorted(read - rows)}"
