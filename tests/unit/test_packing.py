"""How a feeder packs one fill's units into messages (``store._packing``)."""

from __future__ import annotations

from verifleet.store import BATCH_TASK_NAME, TASK_NAME, UnitBatchRef, UnitRef
from verifleet.store._packing import pack_units


def _refs(job: str, n: int, kind: str = "question") -> list[tuple[UnitRef, dict[str, str]]]:
    return [
        (
            UnitRef(job_id=job, question_index=i, answering_index=0, replicate=1, kind=kind),  # type: ignore[arg-type]
            {"question_id": f"{job}-q{i}", "answering": "m"},
        )
        for i in range(n)
    ]


def test_a_small_fill_sends_one_message_per_unit() -> None:
    messages = pack_units(_refs("a", 63), max_per_message=8, spread=32)
    assert len(messages) == 63
    assert all(isinstance(ref, UnitRef) and ref.task_name == TASK_NAME for ref, _ in messages)


def test_a_large_fill_packs_up_to_the_limit_in_order() -> None:
    messages = pack_units(_refs("a", 100), max_per_message=8, spread=32)
    # 100 // 32 = 3 units per message: every unit once, in claim order.
    assert [len(ref.units) for ref, _ in messages if isinstance(ref, UnitBatchRef)] == [3] * 33
    assert isinstance(messages[-1][0], UnitRef)  # the hundredth goes alone
    order = [u[0] for ref, _ in messages[:-1] if isinstance(ref, UnitBatchRef) for u in ref.units]
    assert order == list(range(99))
    ref, labels = messages[0]
    assert ref.task_name == BATCH_TASK_NAME
    assert ref.task_args() == ["a", [[0, 0, 1], [1, 0, 1], [2, 0, 1]]]
    assert labels == {"question_id": "a-q0 (+2 more)", "answering": "m", "units": "3"}
    big = pack_units(_refs("a", 1000), max_per_message=8, spread=32)
    assert max(len(r.units) for r, _ in big if isinstance(r, UnitBatchRef)) == 8
    assert sum(len(r.units) if isinstance(r, UnitBatchRef) else 1 for r, _ in big) == 1000


def test_each_job_is_packed_by_its_own_share_and_scenarios_go_alone() -> None:
    fill = _refs("big", 256) + _refs("small", 10) + _refs("big-s", 100, kind="scenario")
    messages = pack_units(fill, max_per_message=8, spread=32)
    by_job: dict[str, list[object]] = {}
    for ref, _ in messages:
        by_job.setdefault(ref.job_id, []).append(ref)
    assert all(isinstance(r, UnitBatchRef) and len(r.units) == 8 for r in by_job["big"])
    # The small job's ten units start on ten threads, not one or two.
    assert len(by_job["small"]) == 10 and all(isinstance(r, UnitRef) for r in by_job["small"])
    assert len(by_job["big-s"]) == 100
    assert all(isinstance(r, UnitRef) and r.kind == "scenario" for r in by_job["big-s"])


def test_one_unit_per_message_when_batching_is_off() -> None:
    messages = pack_units(_refs("a", 1000), max_per_message=1, spread=1)
    assert len(messages) == 1000 and all(isinstance(r, UnitRef) for r, _ in messages)


def test_a_job_can_be_held_to_smaller_messages() -> None:
    fill = _refs("near-end", 256) + _refs("going", 256)
    messages = pack_units(fill, max_per_message=8, spread=32, largest={"near-end": 2})
    sizes: dict[str, set[int]] = {}
    for ref, _ in messages:
        size = len(ref.units) if isinstance(ref, UnitBatchRef) else 1
        sizes.setdefault(ref.job_id, set()).add(size)
    assert sizes == {"near-end": {2}, "going": {8}}
