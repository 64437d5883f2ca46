"""How long ``verifleet --help`` and every ``verifleet COMMAND --help`` take, in a
fresh process each, the way a user types them; and, side by side in the same run,
the same with every command module registered (what the CLI did before it
registered only the command it runs; the modules themselves now import lazily too).

    python bench/cli_help.py [--repeat 3]

Prints the median wall time per command and how many modules it loaded. The
behaviour that must hold (no heavy library imported for help) is tested in
tests/integration/test_cli_help.py by counting modules, not by a clock.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from verifleet.orchestrator.cli import COMMANDS

_PROBE = """
import json, sys
from verifleet.orchestrator.cli import build_parser, main
if sys.argv[1] == "all":
    build_parser()  # every command module, as before the lazy registry
    argv = sys.argv[2:]
else:
    argv = sys.argv[2:]
try:
    main(argv)
except SystemExit:
    pass
sys.stderr.write(json.dumps(len(sys.modules)))
"""


def _time(mode: str, argv: list[str]) -> tuple[float, int]:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, mode, *argv],
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - started
    return took, int(proc.stderr.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = [["--help"]] + [
        [name, "build", "--help"] if name == "llm" else [name, "--help"] for name in COMMANDS
    ]
    print(f"{'command':28} {'lazy s':>8} {'modules':>8} {'all s':>8} {'modules':>8}")
    for argv in rows:
        lazy = [_time("one", argv) for _ in range(args.repeat)]
        eager = [_time("all", argv) for _ in range(args.repeat)]
        print(
            f"{' '.join(argv):28} {statistics.median(t for t, _ in lazy):8.2f} "
            f"{lazy[0][1]:8d} {statistics.median(t for t, _ in eager):8.2f} {eager[0][1]:8d}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
