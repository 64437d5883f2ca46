"""Human labels: a person's word on whether an answer is right.

Labels live beside a results file, in ``<file>.labels.jsonl``, one JSON object
per line: ``question_id``, ``answering`` (the answering model's canonical key),
``replicate``, ``correct`` (true/false) and an optional ``note``. A label is
about the *answer*, so it holds for every judge of that answer and survives
re-export and re-judging; it never changes a recorded verdict. A later line for
the same answer replaces an earlier one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from verifleet.errors import StatisticsError

from ._results import UnitKey

__all__ = ["append_label", "labels_path", "read_labels"]


def labels_path(results: str | Path) -> Path:
    """Where the labels of the results file ``results`` are kept."""
    path = Path(results)
    return path.with_name(f"{path.name}.labels.jsonl")


def read_labels(path: str | Path) -> dict[UnitKey, bool]:
    """The labels in ``path`` (a labels file), by answer; ``{}`` when the file
    does not exist.

    Raises:
        StatisticsError: a line is not a label (the message gives its number).
    """
    source = Path(path)
    if not source.is_file():
        return {}
    labels: dict[UnitKey, bool] = {}
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            key = (str(entry["question_id"]), str(entry["answering"]), entry.get("replicate"))
            correct = entry["correct"]
        except (ValueError, KeyError, TypeError) as exc:
            raise StatisticsError(f"{source}:{number}: not a label: {exc}") from exc
        if not isinstance(correct, bool) or not (key[2] is None or isinstance(key[2], int)):
            raise StatisticsError(
                f"{source}:{number}: 'correct' must be true or false and 'replicate' an integer"
            )
        labels[key] = correct
    return labels


def append_label(
    path: str | Path, key: UnitKey, correct: bool, note: str | None = None, **extra: Any
) -> None:
    """Append one label to the labels file ``path`` (created when missing)."""
    entry = {
        "question_id": key[0],
        "answering": key[1],
        "replicate": key[2],
        "correct": correct,
        "note": note,
        **extra,
    }
    with Path(path).open("a", encoding="utf-8") as out:
        out.write(json.dumps(entry, sort_keys=True) + "\n")
