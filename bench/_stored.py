"""Export of a job's results from Redis, without running workers.

The export only reads what workers stored, so the bench writes those results
itself, through the store's own API (``ResultStore.write_unit``: the same zstd blob
under the same deterministic key a worker writes), then exports in a fresh child
process whose peak resident memory is the export's own:

- ``fast``: ``Job.export`` (``verifleet results JOB --out x.parquet``): stored JSON
  straight to Arrow;
- ``slow``: the reference path, ``write_results(job.iter_results(), ...)``: every
  result validated into a ``VerificationResult`` first (what ``Job.export`` did
  before).

:func:`capitals_results` are shaped like the results of ``bench/scale.py``'s job
(template-only, one-field answers, ~2.3 KB of JSON, ~1 KB stored).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from bench._harness import peak_mb, rss_mb
from verifleet.schemas import (
    ModelIdentity,
    VerificationResult,
    VerificationResultMetadata,
    VerificationResultTemplate,
    md5_hex,
)
from verifleet.store import ResultStore, result_key

__all__ = ["EXPORT_PATHS", "capitals_results", "export_in_child", "fill_store", "run_export"]

EXPORT_PATHS = ("fast", "slow")

_ANSWER_PROMPT = "You are an expert assistant. Answer the question accurately and concisely."
_PARSE_PROMPT = (
    "You are a validation assistant. Parse and validate responses against the given "
    "Pydantic template."
)


def capitals_results(
    n: int, *, answering: int = 5, replicates: int = 2
) -> Iterator[VerificationResult]:
    """``n`` results of a capitals job: questions x ``answering`` models x replicates.

    Every fourth question is answered wrongly, as in ``bench/_harness.capitals``;
    values (timings, token counts) vary per result so that Parquet cannot fold
    columns into a handful of distinct values.
    """
    judge = ModelIdentity(interface="openai_endpoint", model_name="judge")
    models = [
        ModelIdentity(interface="openai_endpoint", model_name=f"answerer{i}")
        for i in range(answering)
    ]
    for index in range(n):
        question, rest = divmod(index, answering * replicates)
        model, replicate = divmod(rest, replicates)
        city = f"Capital{question}"
        said = f"Wrong{question}" if question % 4 == 0 else city
        text = f"What is the capital of Country{question}?"
        prompt, completion = 20 + index % 17, 4 + index % 5
        parse_in, parse_out = 220 + index % 31, 5 + index % 3
        answer = f"The capital is {said}."
        meta = VerificationResultMetadata(
            question_id=f"q{question:06d}",
            template_id=md5_hex(f"template {city}"),
            question_text=text,
            raw_answer=city,
            replicate=replicate + 1,
            answering=models[model],
            parsing=judge,
            answering_system_prompt=_ANSWER_PROMPT,
            parsing_system_prompt=_PARSE_PROMPT,
            completed_without_errors=True,
            execution_time=0.01 + (index % 997) / 1e4,
            timestamp=f"2026-11-22T12:{index // 60 % 60:02d}:{index % 60:02d}.{index % 999_999:06d}+00:00",
            evaluation_mode="template_only",
        )
        template = VerificationResultTemplate(
            raw_llm_response=answer,
            parsed_llm_response={"city": said},
            parsed_gt_response={"city": city},
            template_verification_performed=True,
            verify_result=said == city,
            usage_metadata={
                "answer_generation": {
                    "input_tokens": prompt,
                    "output_tokens": completion,
                    "total_tokens": prompt + completion,
                    "model": models[model].model_name,
                },
                "parsing": {
                    "input_tokens": parse_in,
                    "output_tokens": parse_out,
                    "total_tokens": parse_in + parse_out,
                    "model": "judge",
                },
                "total": {
                    "input_tokens": prompt + parse_in,
                    "output_tokens": completion + parse_out,
                    "total_tokens": prompt + parse_in + completion + parse_out,
                },
            },
        )
        yield VerificationResult(
            metadata=meta, template=template, evaluation_input=answer, used_full_trace=False
        )


def fill_store(url: str, job_id: str, results: Iterable[VerificationResult], total: int) -> int:
    """Store ``results`` as workers would, under their keys; returns the count.

    Written ``_UNIT`` results per ``write_unit`` call (a worker writes one unit's
    results per call): the blobs and keys are the same, the fill just takes fewer
    round trips.
    """
    store = ResultStore.from_url(url)
    units = -(-total // _UNIT)
    store.create_job(job_id, benchmark_json="{}", config_json="{}", total_units=units)
    count = 0
    chunk: list[VerificationResult] = []
    for result in results:
        chunk.append(result)
        if len(chunk) == _UNIT:
            count += _write(store, job_id, chunk)
            chunk = []
    if chunk:
        count += _write(store, job_id, chunk)
    return count


_UNIT = 50


def _write(store: ResultStore, job_id: str, results: list[VerificationResult]) -> int:
    keys = [result_key(r, job_id=job_id) for r in results]
    store.write_unit(job_id, keys[0], results, keys)
    return len(results)


def run_export(url: str, job_id: str, out: Path, path: str) -> dict[str, Any]:
    """In this process: export the job by ``path`` (``fast`` or ``slow``); figures.

    ``cpu_s`` counts every thread of this process (the fast path fetches and writes
    in background threads), so ``cpu_s`` above ``seconds`` means two cores were used.
    """
    from verifleet.orchestrator import write_results
    from verifleet.orchestrator._fleet.job import Job

    imported = rss_mb(os.getpid())
    job = Job(job_id, url)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime
    start = time.perf_counter()
    if path == "fast":
        rows = job.export(out)
    else:
        rows = write_results(job.iter_results(), out, job_id=job_id)
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "rows": rows,
        "seconds": seconds,
        "cpu_s": usage.ru_utime + usage.ru_stime - cpu,
        "imported_mb": imported,
        "peak_mb": peak_mb(),
        "bytes": out.stat().st_size,
        "load": os.getloadavg()[0],
    }


def export_in_child(script: str, url: str, job_id: str, out: Path, path: str) -> dict[str, Any]:
    """Run ``script --phase export --export-path PATH ...`` and return its figures.

    Raises:
        RuntimeError: the child failed (its stderr is in the message).
    """
    command = [sys.executable, script, "--phase", "export", "--export-path", path]
    command += ["--redis", url, "--job", job_id, "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"export child failed:\n{done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures
