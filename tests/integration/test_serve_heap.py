"""The reward server's start-up heap is frozen before it serves (in a child
process: freezing this test process's heap would keep every later test's
garbage alive)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from verifleet.reward.serve._heap import GEN0_THRESHOLD

pytestmark = pytest.mark.integration


def test_settle_heap_freezes_what_is_alive_and_spaces_young_collections() -> None:
    script = textwrap.dedent(
        """
        import gc
        from verifleet.reward.serve import settle_heap
        kept = [[i] for i in range(5000)]  # alive at start-up, like a benchmark
        assert gc.get_freeze_count() == 0
        settle_heap()
        frozen = gc.get_freeze_count()
        garbage = []
        garbage.append(garbage)  # a cycle made while serving: still collectable
        del garbage
        print(frozen, gc.get_threshold()[0], gc.collect())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.split()
    frozen, gen0, collected = (int(x) for x in out)
    assert frozen >= 5000
    assert gen0 == GEN0_THRESHOLD
    assert collected >= 1
