"""Viewer benchmark: load time and page latency over a large result file.

Usage::

    .venv/bin/python bench/viewer.py              # 100,000 results
    .venv/bin/python bench/viewer.py --n 20000
    .venv/bin/python bench/viewer.py --file results.parquet   # an existing file

Writes N realistic results (bench/export.py's generator: template + rubric, ~3 KB
of JSON each) to a temporary Parquet file, then measures what ``verifleet view``
does with it: building the in-memory summary index, the overview, table pages
under each kind of filter and sort (through the real HTTP app, in-process), one
full result read from the file, and the static report. Prints figures; asserts
nothing and is not part of the tests.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

if __package__ in (None, ""):  # run as a script: python bench/viewer.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapi.testclient import TestClient

from bench.export import build_results
from verifleet.orchestrator import write_results
from verifleet.viewer import FileRun, create_app, report_html

# (label, query string) of the table pages measured; each is fetched several times.
QUERIES = (
    ("first page", ""),
    ("page 1000 (offset 50,000)", "offset=50000"),
    ("verdict=fail", "verdict=fail"),
    ("model + verdict", "answering={answering}&verdict=pass"),
    ("keyword", "keyword=kinase"),
    ("search text", "search=apoptosis%20BCL2"),
    ("sort by tokens desc", "sort=-total_tokens"),
    ("search + sort + offset", "search=tumour&sort=-granular&offset=500"),
)
REPEAT = 5


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _timed(call: object, repeat: int = REPEAT) -> tuple[float, float]:
    """Median and worst wall time of ``call()`` in milliseconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), max(times)


def main() -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="results to generate")
    parser.add_argument("--file", type=Path, help="measure this file instead of generating one")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="vf-viewer-bench-") as folder:
        path = args.file
        if path is None:
            path = Path(folder) / "results.parquet"
            start = time.perf_counter()
            write_results(build_results(args.n), path)
            print(f"generated {args.n:,} results in {time.perf_counter() - start:.1f} s")
        print(f"file: {path} ({path.stat().st_size / 1e6:.1f} MB)")

        before = _rss_mb()
        start = time.perf_counter()
        run = FileRun(path)
        # Both frames are built lazily; count them in, as the first page pays for them.
        frame = run.index.frame
        traits = run.index.trait_frame
        load = time.perf_counter() - start
        print(
            f"load: {len(run.index):,} results indexed in {load:.1f} s "
            f"({len(run.index) / load:,.0f} results/s); frames hold "
            f"{(frame.memory_usage(deep=True).sum() + traits.memory_usage(deep=True).sum()) / 1e6:.0f} MB, "
            f"process grew {_rss_mb() - before:.0f} MB"
        )

        client = TestClient(create_app([run]))
        median, worst = _timed(lambda: client.get("/api/runs/0/overview").raise_for_status())
        print(f"overview: median {median:.0f} ms, worst {worst:.0f} ms")
        median, worst = _timed(lambda: client.get("/api/runs/0/facets").raise_for_status())
        print(f"filter values: median {median:.0f} ms, worst {worst:.0f} ms")
        answering = client.get("/api/runs/0/facets").json()["answering"][0]
        for label, query in QUERIES:
            query = query.format(answering=quote(answering))
            url = "/api/runs/0/results?limit=50" + (f"&{query}" if query else "")
            total = client.get(url).json()["total"]
            median, worst = _timed(lambda url=url: client.get(url).raise_for_status())
            print(
                f"table {label:<28} {total:>7,} rows: median {median:4.0f} ms, worst {worst:4.0f} ms"
            )
        rows = [0, len(run.index) // 2, len(run.index) - 1]
        for row in rows:
            median, worst = _timed(
                lambda row=row: client.get(f"/api/runs/0/results/{row}").raise_for_status()
            )
            print(f"result {row:>7}: median {median:.0f} ms, worst {worst:.0f} ms")
        start = time.perf_counter()
        size = len(report_html([run]).encode())
        print(f"report: {size / 1e6:.1f} MB in {time.perf_counter() - start:.1f} s")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
        print(f"peak RSS of this process: {peak:.0f} MB")


if __name__ == "__main__":
    main()
