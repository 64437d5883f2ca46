"""Results locations and job ids (issue 34, item 5), from their text alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from verifleet.results._roots import ResultsRoots, location_problem
from verifleet.store import job_id_problem


@pytest.mark.parametrize(
    "job_id",
    ["../x", "..", "a/b", "a\\b", "a:b", "x\n", "a\x00b", " x", ".x", "a..b", "a" * 129, ""],
)
def test_malformed_job_ids_are_refused(job_id: str) -> None:
    assert job_id_problem(job_id)


@pytest.mark.parametrize("job_id", ["nightly-42", "20261122-093012-a1b2c3", "a.b_c-D", "a" * 128])
def test_well_formed_job_ids_pass(job_id: str) -> None:
    assert job_id_problem(job_id) is None


@pytest.mark.parametrize(
    "url",
    [
        "ftp://127.0.0.1:21/x",
        "http://h/x",
        "https://h/x",
        "sftp://h/x",
        "simplecache::s3://b/x",
        "s3://b/../x",
        "/data/../etc",
        "",
        "/data/x\n",
    ],
)
def test_locations_off_the_allow_list_are_refused(url: str) -> None:
    assert location_problem(url)


def test_roots_allow_only_what_lies_under_them(tmp_path: Path) -> None:
    roots = ResultsRoots([str(tmp_path / "root"), "s3://bucket/verifleet/"])
    assert roots.refusal(str(tmp_path / "root")) is None
    assert roots.refusal(str(tmp_path / "root" / "team-a")) is None
    assert roots.refusal("s3://bucket/verifleet/team-a") is None
    assert roots.refusal(f"file://{tmp_path / 'root' / 'x'}") is None
    # Siblings sharing a prefix, parents, other buckets: outside.
    for url in (
        str(tmp_path / "root-2"),
        str(tmp_path),
        "s3://bucket/verifleet-other/x",
        "s3://other/verifleet/x",
        "gs://bucket/verifleet/x",
    ):
        assert "outside" in (roots.refusal(url) or ""), url
    # A symlink inside the root that points out of it is outside.
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "link").symlink_to(tmp_path / "elsewhere")
    assert roots.refusal(str(tmp_path / "root" / "link" / "x"))
    assert "no results root" in (ResultsRoots([]).refusal(str(tmp_path)) or "")
    with pytest.raises(ValueError, match="not accepted"):
        ResultsRoots(["ftp://h/x"])
