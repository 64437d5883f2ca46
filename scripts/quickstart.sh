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
.venv/bin/verifleet run examples/demo/benchmark.yaml \
    --answering local --parsing local \
    --mode template_and_rubric --concurrency 4 \
    --out demo-results.parquet
.venv/bin/python - <<'PY'
import pandas as pd

from verifleet.orchestrator import read_results

pd.set_option("display.max_colwidth", 40)
results = read_results("demo-results.parquet")
frame = results.get_template_results().to_dataframe()
print(frame[["question_id", "field_name", "gt_value", "llm_value", "verify_result"]].to_string(index=False))
PY
cat <<'EOF'

Look at the results in the browser (Ctrl-C stops the viewer):
    .venv/bin/verifleet view demo-results.parquet      # then open http://127.0.0.1:8600/
or write one shareable HTML file:
    .venv/bin/verifleet report demo-results.parquet --out demo-report.html
EOF
