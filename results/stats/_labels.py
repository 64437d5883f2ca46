"""Human labels: a person's word on whether an answer is right.

Labels live beside a results file, in ``<file>.labels.jsonl``, one JSON object
per line: ``question_id``, ``answering`` (the answering model's canonical key),
``replicate``, ``correct`` (true/false, or null to withdraw an earlier label)
and an optional ``note``; other keys (``labelled_at``, ``source``) are kept but
not read. A label is about the *answer*, so it holds for every judge of that
answer and survives re-export and re-judging; it never changes a recorded
verdict. A later line for the same answer replaces an earlier one.

This module is the one reader and writer of that file: the viewer appends to it,
``verifleet judges`` reads it, and every command that writes a results file
derived from another one (``reverify``, ``export``) carries it over.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from verifleet.errors import StatisticsError

from ._results import UnitKey

__all__ = [
    "Label",
    "append_label",
    "carry_labels",
    "label_cells",
    "labels_path",
    "read_label_entries",
    "read_labels",
    "write_labels",
]

# Appends from the viewer's request threads must not interleave within a line.
_WRITE_LOCK = threading.Lock()


@dataclass(frozen=True)
class Label:
    """One answer's label: right or wrong, and why."""

    correct: bool
    note: str | None = None

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {"correct": self.correct, "note": self.note}


def labels_path(results: str | Path) -> Path:
    """Where the labels of the results file ``results`` are kept."""
    path = Path(results)
    return path.with_name(f"{path.name}.labels.jsonl")


def read_label_entries(path: str | Path) -> dict[UnitKey, Label]:
    """The labels in ``path`` (a labels file), by answer, the last line for an
    answer winning (a ``null`` ``correct`` withdraws the answer's label); ``{}``
    when the file does not exist.

    Raises:
        StatisticsError: a line is not a label, or the file cannot be read (the
            message gives the file and the line number).
    """
    source = Path(path)
    if not source.is_file():
        return {}
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise StatisticsError(f"{source}: cannot read the labels: {exc}") from exc
    labels: dict[UnitKey, Label] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            key = (str(entry["question_id"]), str(entry["answering"]), entry.get("replicate"))
            correct = entry["correct"]
            note = entry.get("note")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StatisticsError(f"{source}:{number}: not a label: {exc}") from exc
        if not (correct is None or isinstance(correct, bool)) or not (
            key[2] is None or (isinstance(key[2], int) and not isinstance(key[2], bool))
        ):
            raise StatisticsError(
                f"{source}:{number}: 'correct' must be true, false or null and "
                "'replicate' an integer"
            )
        if note is not None and not isinstance(note, str):
            raise StatisticsError(f"{source}:{number}: 'note' must be text")
        if correct is None:
            labels.pop(key, None)
        else:
            labels[key] = Label(correct, note or None)
    return labels


def read_labels(path: str | Path) -> dict[UnitKey, bool]:
    """The labels in ``path`` as right/wrong by answer (see :func:`read_label_entries`).

    Raises:
        StatisticsError: as for :func:`read_label_entries`.
    """
    return {key: label.correct for key, label in read_label_entries(path).items()}


def _line(key: UnitKey, correct: bool | None, note: str | None, extra: dict[str, object]) -> str:
    entry = {
        **extra,
        "question_id": key[0],
        "answering": key[1],
        "replicate": key[2],
        "correct": correct,
        "note": note,
    }
    return json.dumps(entry, sort_keys=True, ensure_ascii=False) + "\n"


def append_label(
    path: str | Path, key: UnitKey, correct: bool | None, note: str | None = None, **extra: object
) -> None:
    """Append one label to the labels file ``path`` (created when missing);
    ``correct=None`` withdraws the answer's label. The line is written with one
    call and flushed before returning.

    Raises:
        OSError: the file cannot be written.
    """
    line = _line(key, correct, note, extra)
    with _WRITE_LOCK, Path(path).open("a", encoding="utf-8") as out:
        out.write(line)
        out.flush()
        os.fsync(out.fileno())


def write_labels(path: str | Path, labels: dict[UnitKey, Label]) -> None:
    """Replace the labels file ``path`` by ``labels`` (one line per answer),
    atomically; an empty mapping removes the file.

    Raises:
        OSError: the file cannot be written.
    """
    target = Path(path)
    if not labels:
        target.unlink(missing_ok=True)
        return
    temp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        with temp.open("w", encoding="utf-8") as out:
            for key in sorted(labels, key=str):
                label = labels[key]
                out.write(_line(key, label.correct, label.note, {}))
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)


def carry_labels(source: str | Path, destination: str | Path) -> dict[UnitKey, Label]:
    """Give the results file ``destination`` the labels of ``source`` (a results
    file it was derived from: re-exported, re-judged). Labels ``destination``
    already has win over ``source``'s for the same answer; nothing is written when
    neither has any (and the same file is left alone).

    Returns:
        The labels ``destination`` now has.

    Raises:
        StatisticsError: a labels file is not valid.
        OSError: the labels file cannot be written.
    """
    src, dst = labels_path(source), labels_path(destination)
    if src.resolve() == dst.resolve():
        return read_label_entries(dst)
    merged = {**read_label_entries(src), **read_label_entries(dst)}
    if merged:
        write_labels(dst, merged)
    return merged


def label_cells(labels: dict[UnitKey, Label]) -> dict[UnitKey, tuple[bool, str | None]]:
    """``labels`` in the form the result writers take for their label columns."""
    return {key: (label.correct, label.note) for key, label in labels.items()}
