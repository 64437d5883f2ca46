"""The annotation -> Arrow mapping that future result fields will go through."""

from __future__ import annotations

import datetime as dt
import enum
import math
from typing import Any, Literal

import pyarrow as pa
import pytest
from pydantic import BaseModel

from verifleet.orchestrator import RESULT_ARROW_SCHEMA
from verifleet.results._export.arrow_types import codec_for_annotation, codec_for_model


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Mixed(enum.Enum):
    ONE = 1
    TWO = "two"


class Inner(BaseModel):
    label: str
    extra: dict[str, Any] | None = None


class Sample(BaseModel):
    count: int
    ratio: float | None = None
    flag: bool = False
    mode: Literal["batch", "sequential"] = "batch"
    level: Literal[1, 2, 3] = 1
    flag_or_number: Literal[True, 1] = 1
    colour: Colour = Colour.RED
    mixed: Mixed = Mixed.ONE
    names: list[str] = []
    maybe_numbers: list[int | None] | None = None
    scores: dict[str, float] | None = None
    either: int | str = 0
    anything: Any = None
    when: dt.datetime | None = None
    inner: Inner | None = None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("count", pa.int64()),
        ("ratio", pa.float64()),
        ("flag", pa.bool_()),
        ("mode", pa.string()),
        ("level", pa.int64()),
        ("colour", pa.string()),
        ("names", pa.list_(pa.string())),
        ("maybe_numbers", pa.list_(pa.int64())),
    ],
)
def test_scalars_and_scalar_lists_map_to_native_types(name: str, expected: pa.DataType) -> None:
    codec = codec_for_annotation(name, Sample.model_fields[name].annotation)
    assert codec.kind == "plain"
    assert codec.arrow_type == expected


@pytest.mark.parametrize(
    "name", ["flag_or_number", "mixed", "scores", "either", "anything", "when"]
)
def test_free_form_and_ambiguous_types_become_json_text(name: str) -> None:
    codec = codec_for_annotation(name, Sample.model_fields[name].annotation)
    assert codec.kind == "json"
    assert codec.arrow_type == pa.string()


def test_nested_models_become_structs_that_round_trip() -> None:
    codec = codec_for_model("sample", Sample)
    inner = next(child for child in codec.children if child.name == "inner")
    assert inner.kind == "struct"
    assert inner.arrow_type.field("extra").type == pa.string()

    value = Sample(
        count=3,
        ratio=math.inf,
        names=["é", ""],
        scores={"nan": math.nan},
        either="x",
        anything=[1, {"k": None}],
        when=dt.datetime(2026, 1, 2, 3, 4, 5),
        inner=Inner(label="l", extra={"big": 2**80}),
    )
    stored = pa.array([codec.encode(value.model_dump(mode="json"))], codec.arrow_type)
    (row,) = stored.to_pylist()
    back = Sample.model_validate(codec.decode(row))
    # NaN is not equal to itself: compare it apart from the rest.
    assert back.scores is not None and math.isnan(back.scores["nan"])
    assert back.model_copy(update={"scores": None}) == value.model_copy(update={"scores": None})


def test_none_and_empty_stay_distinct_in_json_cells() -> None:
    codec = codec_for_annotation("scores", dict[str, float] | None)
    assert codec.encode(None) is None
    assert codec.encode({}) == "{}"
    assert codec.decode(None) is None
    assert codec.decode("{}") == {}


def test_result_schema_is_flat_first_then_one_struct_per_section() -> None:
    names = RESULT_ARROW_SCHEMA.names
    assert names[-4:] == ["template", "rubric", "deep_judgment", "deep_judgment_rubric"]
    assert all(pa.types.is_struct(RESULT_ARROW_SCHEMA.field(n).type) for n in names[-4:])
    assert not any(pa.types.is_struct(RESULT_ARROW_SCHEMA.field(n).type) for n in names[:-4])
    assert len(names) == len(set(names))
    assert RESULT_ARROW_SCHEMA.metadata == {
        b"verifleet.format": b"verifleet-results",
        b"verifleet.version": b"1",
    }
