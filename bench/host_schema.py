"""What the host's check of a judge reply costs, for honest and hostile schemas.

``schema_errors`` checks every judge reply against the schema the judge was given;
for a template that schema is template-made. This prints the time of one check
(median of N, first call included separately: it builds the validator) for an
honest template's schema and for the three attacks of issue 20: a backtracking
``pattern`` with a value of forty ``a``s and a ``!``, a ``$ref`` to a local
listener that never answers, and a doubling ``anyOf`` chain forty deep; plus a
reply built to make a recursive schema exponential (stopped by the step budget).
The listener's connection count is printed too (must be 0).

Before issue 20 the first attack froze the process (2**40 backtracking steps
under the GIL), the second waited for ever on the listener, the third ran for
minutes.

    python bench/host_schema.py
    python bench/host_schema.py --repeat 2000
"""

from __future__ import annotations

import argparse
import socket
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from verifleet.pipeline._llm import schema_errors


def _object(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


def _chain(depth: int) -> dict[str, Any]:
    definitions: dict[str, Any] = {
        f"D{i}": {"anyOf": [{"$ref": f"#/$defs/D{i + 1}"}, {"$ref": f"#/$defs/D{i + 1}"}]}
        for i in range(depth)
    }
    definitions[f"D{depth}"] = {"type": "integer"}
    return {**_object(value={"$ref": "#/$defs/D0"}), "$defs": definitions}


def _recursive() -> tuple[dict[str, Any], Any]:
    branch = {"type": "object", "properties": {"x": {"$ref": "#/$defs/A"}}}
    schema = {"$ref": "#/$defs/A", "$defs": {"A": {"anyOf": [branch, dict(branch)]}}}
    reply: Any = 1
    for _ in range(40):
        reply = {"x": reply}
    return schema, reply


def _time(check: Callable[[], Any], repeat: int) -> tuple[float, float]:
    start = time.perf_counter()
    check()
    first = time.perf_counter() - start
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        check()
        samples.append(time.perf_counter() - start)
    return first * 1000, statistics.median(samples) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=500, help="checks per case (median)")
    args = parser.parse_args(argv)

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.1)
    port = listener.getsockname()[1]
    connections: list[Any] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connections.append(listener.accept()[0])  # held, never answered
            except (TimeoutError, OSError):
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()

    honest = _object(
        city={"type": "string", "description": "the capital"},
        population={"type": "number"},
        tags={"type": "array", "items": {"type": "string"}},
        note={"anyOf": [{"type": "string"}, {"type": "null"}]},
    )
    recursive_schema, recursive_reply = _recursive()
    cases: list[tuple[str, dict[str, Any], Any]] = [
        (
            "honest schema, good reply",
            honest,
            {"city": "Paris", "population": 2.1, "tags": ["a"], "note": None},
        ),
        ("honest schema, bad reply", honest, {"city": 3, "tags": [1]}),
        (
            "pattern ^(a+)+$, 40 a's + '!'",
            _object(value={"type": "string", "pattern": "^(a+)+$"}),
            {"value": "a" * 40 + "!"},
        ),
        (
            "$ref to a silent listener",
            _object(value={"$ref": f"http://127.0.0.1:{port}/s.json"}),
            {"value": "x"},
        ),
        ("anyOf doubling chain, 40 deep", _chain(40), {"value": "not an integer"}),
        ("recursive anyOf, 40-deep reply", recursive_schema, recursive_reply),
    ]
    print(f"{'case':<34} {'first ms':>9} {'median ms':>10}  problems")
    for label, schema, reply in cases:
        first, median = _time(lambda s=schema, r=reply: schema_errors(r, s), args.repeat)
        problems = schema_errors(reply, schema)
        print(f"{label:<34} {first:>9.3f} {median:>10.3f}  {len(problems)}")
    stop.set()
    thread.join(timeout=5)
    listener.close()
    print(f"connections to the listener: {len(connections)}")
    for conn in connections:
        conn.close()
    return 1 if connections else 0


if __name__ == "__main__":
    raise SystemExit(main())
