"""Sandbox executors start from bytecode the host prepared (issue 36).

Executors run ``python -I -B`` and this environment (like many CI ones) sets
``PYTHONDONTWRITEBYTECODE``: without a prepared cache every executor compiled
pydantic and the template runtime from source. ``python -v`` names each module
loaded from bytecode ("code object from ..."), which is what is checked here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from verifleet.sandbox import SandboxMode, SandboxPool, SandboxSettings
from verifleet.sandbox._bytecode import prepare_bytecode
from verifleet.sandbox._launch import executor_command

pytestmark = pytest.mark.integration


def _loaded_from_bytecode(prefix: Path) -> list[str]:
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-B",
            "-v",
            "-X",
            f"pycache_prefix={prefix}",
            "-c",
            "import verifleet.sandbox._executor, pydantic.main",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        cwd="/",
    )
    # "code object from '<file>'": a .pyc when read from bytecode, else the source.
    return [
        line
        for line in done.stderr.splitlines()
        if line.startswith("# code object from") and line.endswith(".pyc'")
    ]


def test_the_executors_modules_load_from_the_prepared_bytecode(tmp_path: Path) -> None:
    prefix = tmp_path / "pycache"
    assert prepare_bytecode(str(prefix))
    loaded = _loaded_from_bytecode(prefix)
    assert any(str(prefix) in line and "pydantic/main." in line for line in loaded), loaded[:5]
    assert any(str(prefix) in line and "sandbox/_executor." in line for line in loaded)
    # Control: the same interpreter pointed at an empty folder loads them from source.
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not any("pydantic/main." in line for line in _loaded_from_bytecode(empty))


def test_executors_are_started_with_the_folder_and_answer(tmp_path: Path) -> None:
    prefix = tmp_path / "pycache"
    assert prepare_bytecode(str(prefix))
    settings = SandboxSettings(mode=SandboxMode.SECCOMP, pool_size=1, bytecode_dir=str(prefix))
    assert f"pycache_prefix={prefix}" in executor_command(settings)
    strict = settings.model_copy(update={"mode": SandboxMode.STRICT})
    command = executor_command(strict)
    # Bound read-only into bubblewrap, before the root is made read-only.
    bind = command.index(str(prefix))
    assert command[bind - 1] == "--ro-bind" and bind < command.index("--remount-ro")
    pool = SandboxPool(settings)
    try:
        pool.start()
        assert pool.executor_cpu_seconds() > 0
    finally:
        pool.close()
