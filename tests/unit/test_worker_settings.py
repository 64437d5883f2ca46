"""Worker settings from VERIFLEET_* variables (pydantic-settings)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from verifleet.workers._settings import WorkerSettings


def test_variables_set_the_fields_and_empty_ones_count_as_unset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VERIFLEET_REDIS_URL", "redis://:pw@db:6380/2")
    monkeypatch.setenv("VERIFLEET_UNIT_DEADLINE", "60")
    monkeypatch.setenv("VERIFLEET_PREFIX", "")
    settings = WorkerSettings.from_env()
    assert settings.redis_url == "redis://:pw@db:6380/2"
    assert settings.unit_deadline == 60.0 and settings.visibility_timeout == 121
    assert settings.prefix == "vf"


def test_a_bad_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERIFLEET_LEASE_SECONDS", "soon")
    monkeypatch.setenv("VERIFLEET_RESTORE_INTERVAL", "0")
    with pytest.raises(ValueError) as caught:
        WorkerSettings.from_env()
    assert "VERIFLEET_LEASE_SECONDS='soon'" in str(caught.value)
    assert "VERIFLEET_RESTORE_INTERVAL='0'" in str(caught.value)


def test_docs_fleet_settings_table_lists_every_field_with_its_default() -> None:
    # The module's docstring points to this table as the one description of the settings.
    docs = (Path(__file__).resolve().parents[2] / "docs" / "fleet.md").read_text()
    rows = dict(re.findall(r"^\| `(VERIFLEET_[A-Z_]+)` \| ([^|]+) \|", docs, re.MULTILINE))
    for name, field in WorkerSettings.model_fields.items():
        variable = f"VERIFLEET_{name.upper()}"
        assert variable in rows, f"{variable} is not in docs/fleet.md's Settings table"
        if name != "redis_url":  # the CLI and workers require it; the table says so
            default = f"{field.default:g}" if isinstance(field.default, float) else field.default
            assert rows[variable].strip() == f"`{default}`", (variable, rows[variable])
