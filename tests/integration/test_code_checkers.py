"""Benchmark checks never run template code in the calling process, whatever
was imported first (the checker is passed explicitly, the sandbox by default).

Each check runs in a fresh interpreter that imports only what it names, so no
earlier import in the test session can decide the outcome. The template's class
body reports the pid it runs in (after escaping the interpreter guard, as a
hostile template would): it must never be the caller's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPORTS_ITS_PID = """
from pydantic import main
from verifleet.templates import BaseAnswer

raise ValueError("pid=" + str(main.sys.modules["os"].getpid()))


class Answer(BaseAnswer):
    value: str
"""

CHECK = """
import json, os, sys
{imports}
from verifleet.schemas import Benchmark, Question, load_benchmark, dump_benchmark
bench = Benchmark(name="b", questions=[Question(id="q", text="t", answer_template=sys.argv[1])])
problems = bench.validate({checker})
dump_benchmark(bench, sys.argv[2])
try:
    load_benchmark(sys.argv[2]{load_checker})
    loaded = ""
except Exception as exc:
    loaded = str(exc)
print(json.dumps({{"pid": os.getpid(), "validate": problems, "load": loaded}}))
"""


def _check(tmp_path: Path, imports: str, checker: str = "") -> dict[str, object]:
    code = CHECK.format(
        imports=imports,
        checker=f"checker={checker}" if checker else "",
        load_checker=f", checker={checker}" if checker else "",
    )
    out = subprocess.run(
        [sys.executable, "-c", code, REPORTS_ITS_PID, str(tmp_path / "b.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        env={"VERIFLEET_SANDBOX": "rlimits-only", "PATH": "/usr/bin:/bin"},
        check=True,
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize(
    "imports",
    [
        "",  # the data model alone: nothing installs anything
        "import verifleet.sandbox",
        "import verifleet.templates, verifleet.schemas._checkers",
    ],
)
def test_the_default_checker_is_the_sandbox_whatever_was_imported(
    tmp_path: Path, imports: str
) -> None:
    result = _check(tmp_path, imports)
    own = f"pid={result['pid']}"
    problems = " ".join(map(str, result["validate"]))  # type: ignore[call-overload]
    assert "pid=" in problems
    assert own not in problems
    assert "pid=" in str(result["load"])
    assert own not in str(result["load"])


def test_running_code_in_process_takes_the_checker_by_name(tmp_path: Path) -> None:
    result = _check(
        tmp_path, "from verifleet.schemas import IN_PROCESS_CHECKER", "IN_PROCESS_CHECKER"
    )
    own = f"pid={result['pid']}"
    assert own in " ".join(map(str, result["validate"]))  # type: ignore[call-overload]
    assert own in str(result["load"])
