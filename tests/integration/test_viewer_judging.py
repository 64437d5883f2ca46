"""Human labels and the paired comparison in a real headless Chromium, checked
against the command line (issue 38):

- A person labels results on their result pages; the labels land beside the
  results file, the recorded verdicts stay, and ``verifleet export`` (the label
  columns of the Parquet file) and ``verifleet judges`` (each judge against the
  labels) include them.
- The Compare page shows the paired comparison with the figures ``verifleet
  compare A B --json`` prints for the same two files: pass rates, the clustered
  interval, McNemar's p, unpaired counts and flips attributed per fingerprint
  part (some questions got a new template, others a new judge).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _support.browser import By, ViewerProcess, browser, wait_for
from _support.fleet import run_cli
from _support.viewer_data import full_run
from selenium.webdriver.remote.webdriver import WebDriver

from verifleet.orchestrator import read_results, write_results
from verifleet.results.stats import labels_path, read_label_entries, unit_key
from verifleet.schemas import ResultFingerprint, VerificationResult

pytestmark = pytest.mark.integration

__all__ = ["browser"]

COUNT = 120  # 30 questions x 2 answering x 2 judges
# Results whose verdict flips in run B: questions 0-9 got a new template, 10-19 a
# new judge, 20-29 nothing (a flip there is judge noise: "nothing recorded").
FLIPPED = frozenset({1, 2, 6, 13, 17, 40, 41, 42, 43, 77, 85, 86, 90, 101, 118})


def _fingerprinted(results: list[VerificationResult], after: bool) -> list[VerificationResult]:
    out = []
    for r in results:
        q = int(r.metadata.question_id[1:])
        template = "t2" if after and q < 10 else "t1"
        judge = "j2" if after and 10 <= q < 20 else "j1"
        fp = ResultFingerprint(
            question="q", template=template, rubric="none", judge=judge, answering="a",
            settings="s", version="1", digest=template + judge,
        )  # fmt: skip
        out.append(
            r.model_copy(update={"metadata": r.metadata.model_copy(update={"fingerprint": fp})})
        )
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("judging")
    before, after = folder / "before.parquet", folder / "after.parquet"
    write_results(_fingerprinted(full_run(COUNT), False), before)
    # B lacks the last question's results: unpaired pairs are counted, not compared.
    write_results(_fingerprinted(full_run(COUNT, flipped=FLIPPED), True)[:-4], after)
    return before, after


@pytest.fixture(scope="module")
def viewer(files: tuple[Path, Path]) -> Iterator[ViewerProcess]:
    process = ViewerProcess(str(files[0]), str(files[1]))
    try:
        yield process
    finally:
        process.stop()


def _open(driver: WebDriver, url: str) -> None:
    """Load ``url`` and wait until the page has rendered it (the page moves its
    ``data-rendered`` counter; the old value is wiped first, so a reload of the
    same page, which starts counting again, is noticed too)."""
    driver.execute_script("if (document.body) document.body.dataset.rendered = 'old'")
    if driver.current_url == url:
        driver.refresh()  # the same hash again would not render anew
    else:
        driver.get(url)
    wait_for(
        driver,
        lambda d: d.execute_script("return document.body.dataset.rendered") not in (None, "old"),
    )


def _label(driver: WebDriver, url: str, row: int, right: bool, note: str) -> None:
    """Label the answer of result ``row`` of run 0 on its page, as a person does."""
    _open(driver, f"{url}#/run/0/result/{row}")
    field = driver.find_element(By.ID, "label-note")
    field.clear()
    field.send_keys(note)
    driver.find_element(By.ID, "label-right" if right else "label-wrong").click()
    wait_for(driver, lambda d: d.find_element(By.ID, "label-status").text == "saved")
    shown = driver.find_element(By.ID, "label-current")
    assert shown.get_attribute("data-correct") == str(right).lower()
    assert shown.text == f"{'right' if right else 'wrong'} — {note}"


def test_labels_made_in_the_page_reach_the_export_and_judges(
    viewer: ViewerProcess, browser: WebDriver, files: tuple[Path, Path]
) -> None:
    path = files[0]
    results = list(read_results(path))
    # Rows 8 and 10 are the two judges of one answer; 13 and 20 are other answers.
    # Row 8's answer is labelled twice: the second label replaces the first.
    wanted = {8: (False, "gene is wrong"), 13: (True, "checked in the paper"), 20: (False, "no")}
    _label(browser, viewer.url, 8, True, "first look")
    for row, (right, note) in wanted.items():
        _label(browser, viewer.url, row, right, note)
    # The page shows the label again after a reload, and the verdict stays.
    assert unit_key(results[10]) == unit_key(results[8])
    _open(browser, viewer.url + "#/run/0/result/10")
    assert browser.find_element(By.ID, "label-current").text == "wrong — gene is wrong"
    verdict = browser.find_element(By.CSS_SELECTOR, "#result-title .badge").text
    assert verdict == ("pass" if results[10].template.verify_result else "fail")  # type: ignore[union-attr]
    assert list(read_results(path)) == results  # the results file is untouched

    expected = {unit_key(results[row]): right for row, (right, _) in wanted.items()}
    stored = read_label_entries(labels_path(path))
    assert {k: v.correct for k, v in stored.items()} == expected
    assert stored[unit_key(results[8])].note == "gene is wrong"

    # The Parquet export holds the labels in its label columns, for every judge
    # of a labelled answer, and the reverse: no other row has one.
    out = path.with_name("exported.parquet")
    done = run_cli("export", str(path), "--out", str(out))
    assert done.returncode == 0, done.stderr
    table = pq.read_table(out, columns=["label_correct", "label_note"]).to_pylist()
    for result, row in zip(results, table, strict=True):
        key = unit_key(result)
        assert row["label_correct"] == expected.get(key)
        assert (row["label_note"] is None) == (key not in expected)
    assert sum(row["label_correct"] is not None for row in table) == 6  # 3 answers x 2 judges

    # `verifleet judges` measures each judge against them, on the file and the export.
    for source in (path, out):
        done = run_cli("judges", str(source), "--json")
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["labelled"] == 3
        for judge, figures in report["against_labels"].items():
            # A judge's result without a verdict (an error) takes no part.
            verdicts = {
                unit_key(r): r.template.verify_result
                for r in results
                if r.metadata.parsing_model == judge
                and r.template is not None
                and isinstance(r.template.verify_result, bool)
            }
            judged = [k for k in expected if k in verdicts]
            agree = sum(verdicts[k] == expected[k] for k in judged)
            assert figures["n"] == len(judged) >= 2
            assert figures["accuracy"]["estimate"] == pytest.approx(agree / len(judged))


def _cell(row: object, field: str) -> str:
    found = row.find_element(By.CSS_SELECTOR, f'td[data-field="{field}"]')  # type: ignore[attr-defined]
    return str(found.get_attribute("data-value"))


def test_the_compare_page_shows_the_figures_of_compare_json(
    viewer: ViewerProcess, browser: WebDriver, files: tuple[Path, Path]
) -> None:
    done = run_cli("compare", str(files[0]), str(files[1]), "--json")
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    assert cli["flip_reasons"].keys() == {"template", "judge", "nothing recorded"}
    _open(browser, viewer.url + "#/compare?a=0&b=1")
    rows = browser.find_elements(By.CSS_SELECTOR, "#paired-table tr.paired-row")
    shown = {row.get_attribute("data-group"): row for row in rows}
    assert list(shown) == ["overall", *cli["groups"]]
    for name, row in shown.items():
        figures = cli["overall"] if name == "overall" else cli["groups"][name]
        for field in ("pairs", "clusters", "a_only", "b_only"):
            assert int(_cell(row, field)) == figures[field], (name, field)
        for field in ("rate_a", "rate_b", "mcnemar_p"):
            assert float(_cell(row, field)) == pytest.approx(figures[field], abs=1e-12)
        ci = row.find_element(By.CSS_SELECTOR, 'td[data-field="ci"]')
        assert float(ci.get_attribute("data-low")) == pytest.approx(figures["difference"]["low"])
        assert float(ci.get_attribute("data-high")) == pytest.approx(figures["difference"]["high"])
        assert float(_cell(row, "estimate")) == pytest.approx(figures["difference"]["estimate"])
    unpaired = browser.find_element(By.ID, "paired-unpaired")
    assert int(unpaired.get_attribute("data-only-a")) == cli["only_a"] > 0
    reasons = {
        li.get_attribute("data-reason"): int(li.get_attribute("data-count"))
        for li in browser.find_elements(By.CSS_SELECTOR, "#flip-reasons li")
    }
    assert reasons == cli["flip_reasons"]
    flips = browser.find_elements(By.CSS_SELECTOR, "#flips tr.flip-row")
    page = sorted(
        (f.get_attribute("data-question"), f.get_attribute("data-reasons")) for f in flips
    )
    assert page == sorted((f["question_id"], ",".join(f["reasons"])) for f in cli["flips"])
    # Every flip of a question with a new template is put down to the template, and so on.
    for question, why in page:
        q = int(question[1:])
        assert why == ("template" if q < 10 else "judge" if q < 20 else "nothing recorded")
