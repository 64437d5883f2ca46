"""What recording every model call (``template.model_calls``) costs: the same
local run with ``record_model_calls`` on and off, side by side in one process.

The benchmark is the tests' capitals one (one-field templates, short answers),
answered by the scripted endpoint (bench/endpoint.py) in a thread, with the
abstention check on (three calls per result: answer, abstention, parse). For each
mode it prints, per result, its bytes as JSON, as the zstd blob the fleet's
Redis stores (each result compressed alone, at the store's level) and in a
Parquet file and in a ``verifleet report`` (its gzip-compressed result pages
included), and the run's wall time.

    python bench/model_calls.py                 # 200 questions
    python bench/model_calls.py --questions 1000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import zstandard

if __package__ in (None, ""):  # run as a script: python bench/model_calls.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import capitals
from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import write_results
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.pipeline import PipelineResources
from verifleet.schemas import ModelConfig, VerificationConfig
from verifleet.store._store import _ZSTD_LEVEL
from verifleet.viewer import FileRun, report_html


def main(argv: list[str] | None = None) -> int:
    """Run both modes and print the figures; 0 on success."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=200, help="questions (default 200)")
    args = parser.parse_args(argv)
    bench, answers = capitals(args.questions)
    for entry in answers.values():
        entry["fields"].update(abstention_detected=False, reasoning="It names a city.")
    resources = PipelineResources()
    folder = Path(tempfile.mkdtemp(prefix="vf-calls-"))
    print(f"{args.questions} questions, 1 answering x 1 parsing model, abstention check on")
    zstd = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
    print(
        f"{'record_model_calls':>18} | {'JSON B/result':>13} | {'zstd (Redis)':>12} | {'Parquet':>7} | {'report':>6} | run s"
    )
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        for record in (False, True, False, True):
            config = VerificationConfig.build(
                answering_models=[ModelConfig.parse(f"{ep.base_url}#answerer")],
                parsing_models=[ModelConfig.parse(f"{ep.base_url}#judge")],
                abstention_enabled=True,
                record_model_calls=record,
            )
            started = time.perf_counter()
            results = [
                r for _u, rs in LocalRunner(bench, config, resources=resources).run() for r in rs
            ]
            took = time.perf_counter() - started
            blobs = [r.model_dump_json().encode() for r in results]
            json_bytes = sum(map(len, blobs))
            zstd_bytes = sum(len(zstd.compress(b)) for b in blobs)
            out = folder / f"results-{record}.parquet"
            write_results(results, out)
            n = len(results)
            report = len(report_html([FileRun(out)]).encode())
            print(
                f"{record!s:>18} | {json_bytes / n:>13,.0f} | {zstd_bytes / n:>12,.0f} | "
                f"{out.stat().st_size / n:>7,.0f} | {report / n:>6,.0f} | {took:.1f}"
            )
            if record:
                assert results[0].template is not None
                stages = [c.stage for c in results[0].template.model_calls]
                assert stages == ["answer_generation", "abstention_check", "parsing"], stages
    resources.sandbox.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
