#!/usr/bin/env bash
# The llama.cpp source build's own check, apart from the default suite: build
# llama-server from the pinned llama-cpp-python sources (10-12 min on two cores the
# first time, then cached under ~/.cache/verifleet), then run the tests marked
# source_build against it (a real completion with structured output, and
# `verifleet llm build --from-source`). The default suite (scripts/test.sh) checks
# the fallback to the source build against a stand-in for the cached build instead
# (tests/integration/test_localllm_runtime.py), so it never compiles llama.cpp
# where the prebuilt server runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/verifleet llm build --from-source >/dev/null
exec .venv/bin/python -m pytest --source-build -m source_build "$@"
