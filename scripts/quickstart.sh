#!/usr/bin/env bash
# The quick start: install verifleet, set up the bundled local model server, and
# verify the demo benchmark end to end with that model as answerer and judge.
# Writes demo-results.parquet and prints pass rates and how long each step took.
# Nothing to configure: no API keys, no servers to start (the model server is
# started and stopped by the run), no compiler on Linux x86-64 with AVX2.
# Measured in fresh clones on the project's 2-core machine (empty pip and verifleet
# caches, cores shared with other test runs): 82 s to the first result (install 33 s,
# model server 4 s, demo 45 s; load average 5.0 -> 3.8), 141 s (56 + 6 + 79 s; load
# 6.7) and 181 s (84 + 3 + 94 s; load 8.3 -> 10). The full install (torch and the
# test tools too) took 97-134 s of it instead, and 182 s before pip's --no-compile.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
# --demo: no test tools and no torch (the embedding check's); scripts/test.sh adds them.
bash scripts/install.sh --demo
installed=$SECONDS
# Chooses and checks (one completion) the llama.cpp server for the model: the
# prebuilt one that install.sh took from PyPI, a few seconds; on a CPU it cannot
# serve (no AVX2, not x86-64), llama-server compiled from the pinned sources
# instead, 10-12 minutes on two cores the first time, then cached.
.venv/bin/verifleet llm build
ready=$SECONDS
# --max-error-rate 1: a 135M judge sometimes fails to fill a template; the demo
# shows those errors in its table instead of stopping on them.
.venv/bin/verifleet run examples/demo/benchmark.yaml \
    --answering local --parsing local \
    --mode template_and_rubric --concurrency 4 \
    --max-error-rate 1 \
    --out demo-results.parquet
.venv/bin/python - <<'PY'
from verifleet.orchestrator import read_results

results = read_results("demo-results.parquet")
frame = results.get_template_results().to_dataframe()
shown = frame[["question_id", "field_name", "gt_value", "llm_value", "verify_result"]].copy()
# to_string ignores display.max_colwidth: cut long values so a row fits a terminal.
for column in ("gt_value", "llm_value"):
    text = shown[column].astype(str)
    shown[column] = text.where(text.str.len() <= 40, text.str.slice(0, 39) + "…")
print(shown.to_string(index=False))
PY
echo
echo "quickstart: first result in $((SECONDS - started)) s (install $((installed - started)) s," \
    "model server $((ready - installed)) s, demo run $((SECONDS - ready)) s)"
cat <<'EOF'

Look at the results in the browser (Ctrl-C stops the viewer):
    .venv/bin/verifleet view demo-results.parquet      # then open http://127.0.0.1:8600/
or write one shareable HTML file:
    .venv/bin/verifleet report demo-results.parquet --out demo-report.html
EOF
