#!/usr/bin/env bash
# Run the whole test suite: lint, type check, then unit, integration and e2e tests.
# Installs what is missing first (scripts/install.sh); the tests start the servers
# they need (redis-server, the local model server, Celery workers) themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# The real-LLM tests run on the prebuilt llama.cpp server (checked here in seconds;
# where it cannot run, this builds llama-server from source once, then cached).
# The tests that need the source build itself are deselected here (marker
# source_build, tests/conftest.py): scripts/test-source-build.sh runs them.
.venv/bin/verifleet llm build >/dev/null
# NeMo Gym's venv (a test dependency from PyPI: minutes on a fresh machine) is
# made beside the checks below; its tests wait for it (a file lock) or, had
# this failed, make it themselves and say why.
(cd tests && exec ../.venv/bin/python -c \
    "from _support.nemo_gym import nemo_gym_venv; nemo_gym_venv()") >/dev/null 2>&1 &
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy -p verifleet
# The import contracts (docs/architecture.md); their report only when one breaks.
if ! layers=$(.venv/bin/python scripts/check_layers.py 2>&1); then
    echo "$layers" >&2
    exit 1
fi
# Four test processes, each test file whole in one of them (pytest-xdist): the
# tests mostly wait on their servers, workers and the model, so on two cores the
# suite took 25-29 min one file at a time, 13.8 min with two processes and 11.5
# with four. VERIFLEET_TEST_PROCESSES=0 runs it in this process alone. The 25
# slowest tests are listed at the end, so a run that grows says where.
exec .venv/bin/python -m pytest -n "${VERIFLEET_TEST_PROCESSES:-4}" --dist loadfile --durations=25 "$@"
