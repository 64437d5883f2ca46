"""Check the import contracts of pyproject.toml ([tool.importlinter]) with import-linter.

import-linter (through grimp) finds a package's modules by walking one directory,
but verifleet's subpackages live in top-level folders mapped into the namespace by
``package-dir``. This script copies the Python files into a temporary
``verifleet/`` tree laid out as the installed package is, and runs
``lint-imports`` against that tree. Exit status: lint-imports'.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _copy_tree(target: Path) -> None:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        mapping = tomllib.load(handle)["tool"]["setuptools"]["package-dir"]
    for name, folder in mapping.items():
        dest = target.joinpath(*name.split("."))
        for source in (ROOT / folder).rglob("*.py"):
            out = dest / source.relative_to(ROOT / folder)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, out)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="verifleet-layers-") as tmp:
        _copy_tree(Path(tmp))
        env = dict(os.environ, PYTHONPATH=tmp)
        command = [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"]
        command += [str(ROOT / "pyproject.toml")]
        return subprocess.run(command, env=env, cwd=tmp, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
