"""Callable traits: restricted source functions, pickled functions and the trust gate."""

from __future__ import annotations

import base64
from concurrent.futures import ThreadPoolExecutor

import cloudpickle
import pytest
from pydantic import ValidationError

from verifleet.schemas import CallableTrait, RubricError, UntrustedCodeError


def _source_trait(source: str, **fields: object) -> CallableTrait:
    return CallableTrait(name="t", callable_source=source, **fields)  # type: ignore[arg-type]


def test_boolean_source_trait() -> None:
    trait = _source_trait("def f(text):\n    return len(text.split()) <= 3\n")
    assert trait.evaluate("short answer") is True
    assert trait.evaluate("this one is too long") is False


def test_invert_result_flips_booleans() -> None:
    trait = _source_trait("def f(text):\n    return 'x' in text\n", invert_result=True)
    assert trait.evaluate("abc") is True


def test_score_source_trait_with_allowed_import() -> None:
    source = "import math\n\ndef evaluate(text):\n    return math.ceil(len(text) / 4)\n"
    trait = _source_trait(source, kind="score", min_score=0, max_score=5)
    assert trait.evaluate("12345678") == 2


def test_score_out_of_range_is_an_error() -> None:
    trait = _source_trait("def f(text):\n    return 9\n", kind="score", min_score=1, max_score=5)
    with pytest.raises(RubricError, match=r"outside \[1, 5\]"):
        trait.evaluate("x")


def test_literal_returns_the_index_of_the_exact_class_name() -> None:
    trait = _source_trait(
        "def f(text):\n    return 'long' if len(text) > 5 else 'short'\n",
        kind="literal",
        classes=["short", "long"],
    )
    assert trait.evaluate("abcdefgh") == 1
    assert trait.evaluate("ab") == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        # The original matches class names exactly and accepts only text.
        ("return 'Long'", "returned 'Long', not one of its classes"),
        ("return 'medium'", "returned 'medium', not one of its classes"),
        ("return 1", "must return a class name, returned int"),
    ],
)
def test_literal_validates_like_the_original(body: str, message: str) -> None:
    trait = _source_trait(f"def f(t):\n    {body}\n", kind="literal", classes=["short", "long"])
    with pytest.raises(RubricError, match=message):
        trait.evaluate("")


def test_score_keeps_float_scores() -> None:
    trait = _source_trait("def f(t):\n    return 3.7\n", kind="score", min_score=1, max_score=5)
    value = trait.evaluate("")
    assert value == 3.7
    assert isinstance(value, float)
    out_of_range = _source_trait(
        "def f(t):\n    return 5.5\n", kind="score", min_score=1, max_score=5
    )
    with pytest.raises(RubricError, match=r"returned 5\.5, outside"):
        out_of_range.evaluate("")


def test_wrong_return_type_names_the_trait() -> None:
    trait = CallableTrait(name="wordy", callable_source="def f(t):\n    return 'yes'\n")
    with pytest.raises(RubricError, match="'wordy' \\(boolean\\) returned str"):
        trait.evaluate("")


def test_exception_in_the_function_becomes_rubric_error() -> None:
    trait = _source_trait("def f(t):\n    return 1 / 0\n")
    with pytest.raises(RubricError, match="ZeroDivisionError"):
        trait.evaluate("")


@pytest.mark.parametrize(
    ("source", "refusal"),
    [
        ("import os\n\ndef f(t):\n    return True\n", "import of 'os'"),
        ("from subprocess import run\n\ndef f(t):\n    return True\n", "import of 'subprocess'"),
        ("def f(t):\n    return ().__class__ is tuple\n", "dunder"),
        ("def f(t):\n    return open('/etc/passwd') is None\n", "NameError"),
        ("def f(t):\n    return __import__('os') is None\n", "dunder"),
        ("def f(t):\n    return True\n\ndef g(t):\n    return False\n", "exactly one function"),
        ("def f(t:\n", "SyntaxError"),
    ],
)
def test_restricted_namespace_refuses(source: str, refusal: str) -> None:
    trait = _source_trait(source)
    with pytest.raises(RubricError, match=refusal):
        trait.evaluate("text")


def test_at_most_one_of_code_and_source() -> None:
    blob = base64.b64encode(b"\x80\x05N.").decode()
    with pytest.raises(ValidationError, match="at most one"):
        CallableTrait(name="t", callable_code=blob, callable_source="def f(t):\n    return 1\n")


def test_a_trait_without_code_loads_and_fails_when_evaluated() -> None:
    # The original loads a checkpoint trait without code (empty bytes) and fails
    # only when it runs; the rest of the rubric is unaffected.
    trait = CallableTrait(name="t")
    assert not trait.has_code
    with pytest.raises(RubricError, match="'t' has no code"):
        trait.evaluate("text")


def test_callable_code_must_be_base64() -> None:
    with pytest.raises(ValidationError, match="base64"):
        CallableTrait(name="t", callable_code="not base64!!")


def _pickled(func: object) -> str:
    return base64.b64encode(cloudpickle.dumps(func)).decode("ascii")


def test_pickled_code_is_refused_without_trust() -> None:
    trait = CallableTrait(name="risky", callable_code=_pickled(lambda t: True))
    assert trait.is_pickled
    with pytest.raises(UntrustedCodeError, match=r"'risky'.*trust_callables=True"):
        trait.evaluate("x")


def test_pickled_code_runs_when_trusted() -> None:
    trait = CallableTrait(
        name="count", kind="score", callable_code=_pickled(lambda t: len(t)), trusted=True
    )
    assert trait.evaluate("four") == 4


def test_from_callable_is_trusted_and_round_trips() -> None:
    trait = CallableTrait.from_callable("has_digit", lambda t: any(c.isdigit() for c in t))
    again = CallableTrait.model_validate_json(trait.model_dump_json())
    assert again.trusted
    assert again.evaluate("a1") is True
    assert again.evaluate("ab") is False


def test_from_callable_checks_arity() -> None:
    with pytest.raises(RubricError, match="one argument"):
        CallableTrait.from_callable("bad", lambda a, b: True)


def test_pickle_of_a_non_function_is_refused() -> None:
    trait = CallableTrait(name="data", callable_code=_pickled([1, 2]), trusted=True)
    with pytest.raises(RubricError, match="not a function"):
        trait.evaluate("x")


def test_many_threads_compile_and_run_source_traits() -> None:
    """Parsing source in many threads at once trips CPython issue 106905 unless
    compiles are serialised; 32 threads over 8 distinct sources must all agree."""
    traits = [
        _source_trait(f"def f(text):\n    return len(text) + {i}\n", kind="score") for i in range(8)
    ]

    def run(index: int) -> int:
        return int(traits[index % 8].evaluate("abc"))

    with ThreadPoolExecutor(max_workers=32) as pool:
        results = list(pool.map(run, range(256)))
    assert results == [3 + (i % 8) for i in range(256)]
