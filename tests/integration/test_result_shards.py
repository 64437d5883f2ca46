"""Result shards (``--results-to``) on a local disk: what a drainer writes reads
back byte for byte, a result that is not UTF-8 writes nothing, and writing one
does not pull pandas into the worker process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from verifleet.results._shards import read_shard, shard_keys, write_shard

pytestmark = pytest.mark.integration


def _items(n: int) -> list[tuple[str, bytes]]:
    # Non-ASCII text (multi-byte UTF-8) and an empty result among them: the
    # offsets are byte counts, not character counts.
    texts = ["Zürich", "東京", "🙂 ok", ""]
    return [
        (f"key{i:04d}", json.dumps({"i": i, "text": texts[i % 4]}, ensure_ascii=False).encode())
        if i % 7
        else (f"key{i:04d}", b"")
        for i in range(n)
    ]


def test_a_shard_reads_back_byte_for_byte(tmp_path: Path) -> None:
    items = _items(2500)
    url = write_shard(str(tmp_path), "job", items)
    assert list(read_shard(url)) == items
    assert shard_keys(url) == [key for key, _ in items]


def test_a_result_that_is_not_utf8_writes_no_shard(tmp_path: Path) -> None:
    items = [*_items(3), ("bad", b"\xff\xfe not text")]
    with pytest.raises(pa.ArrowInvalid):
        write_shard(str(tmp_path), "job", items)
    assert list((tmp_path / "job").glob("*.parquet")) == []


def test_writing_a_shard_does_not_import_pandas(tmp_path: Path) -> None:
    # pandas costs a drained worker ~50 MB for good; pa.array imports it on first use.
    code = (
        "import sys\n"
        "from verifleet.results._shards import write_shard\n"
        f"write_shard({str(tmp_path)!r}, 'job', [('k', b'{{}}')])\n"
        "print('pandas' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
    assert len(list((tmp_path / "job").glob("*.parquet"))) == 1
