"""Settings read from the environment are described once, in the docs' settings
tables: every variable a module reads is listed in its table (the modules'
docstrings point there instead of keeping a copy)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("doc", "modules", "pattern", "at_least"),
    [
        (
            "docs/security.md",
            ["sandbox/_settings.py", "sandbox/_bytecode.py", "sandbox/_identity.py"],
            r"VERIFLEET_SANDBOX[A-Z_]*",
            8,
        ),
        ("docs/security.md", ["schemas/_result_limits.py"], r"VERIFLEET_RESULT_MAX_[A-Z_]+", 6),
        ("docs/fleet.md", ["store/_redis_url.py"], r"VERIFLEET_REDIS_SSL_[A-Z_]+", 5),
    ],
)
def test_every_variable_read_is_in_the_docs_table(
    doc: str, modules: list[str], pattern: str, at_least: int
) -> None:
    rows = [line for line in (_ROOT / doc).read_text().splitlines() if line.startswith("| `")]
    listed = {name for row in rows for name in re.findall(rf"`({pattern})`", row)}
    read: set[str] = set()
    for module in modules:
        read |= set(re.findall(rf'"({pattern})"', (_ROOT / module).read_text()))
    assert len(read) >= at_least, read  # the scan itself found the variables
    assert read <= listed, f"not in {doc}'s settings tables: {sorted(read - listed)}"
