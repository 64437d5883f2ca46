"""One registry per extension point, and every place that lists its entries
agrees with it: model interfaces (``verifleet.schemas`` names them and their kind,
the pipeline builds a caller for each kind) and verification primitives
(``verifleet.templates.registry``, read by templates' import names and by scenario
conditions)."""

from __future__ import annotations

import inspect
from typing import get_args

import pytest

import verifleet.templates as templates
from verifleet.pipeline import register_interface, registered_interfaces
from verifleet.pipeline._llm import _route
from verifleet.pipeline._llm._route import FACTORIES
from verifleet.schemas import (
    InterfaceKind,
    ModelConfig,
    interface_kind,
    interface_names,
)
from verifleet.schemas._config import _INTERFACES
from verifleet.schemas._scenario._conditions import primitive_from
from verifleet.templates import TracePrimitive, VerificationPrimitive
from verifleet.templates.karenina_compat import KARENINA_NAMES
from verifleet.templates.registry import CONDITION_PRIMITIVES, PRIMITIVES, TRACE_PRIMITIVES


def test_every_kind_of_interface_has_a_caller_and_every_name_a_kind() -> None:
    kinds = set(get_args(InterfaceKind))
    assert set(FACTORIES) == kinds - {"registered"}
    assert registered_interfaces() == interface_names()
    for name in interface_names():
        assert interface_kind(name) in kinds, name
    assert interface_kind("openrouter") == interface_kind("openai_endpoint") == "openai_compatible"


def test_a_registered_interface_is_in_the_one_registry() -> None:
    name = "registry-agreement-test"
    assert interface_kind(name) is None
    with pytest.raises(ValueError, match="unknown interface"):
        ModelConfig(model_name="m", interface=name)
    register_interface(name, FACTORIES["langchain"])
    try:
        assert name in registered_interfaces() and name in interface_names()
        assert interface_kind(name) == "registered"
        assert ModelConfig(model_name="m", interface=name).interface == name
        with pytest.raises(ValueError, match="already registered"):
            register_interface(name, FACTORIES["langchain"])
        with pytest.raises(ValueError, match="already registered"):
            register_interface("openrouter", FACTORIES["langchain"])
    finally:  # the registries are the process's: leave them as found
        _route._REGISTERED.pop(name, None)
        _INTERFACES.pop(name, None)


def _defined_primitives() -> set[type[VerificationPrimitive]]:
    """Every concrete primitive class the template runtime defines."""
    found: set[type[VerificationPrimitive]] = set()
    pending: list[type[VerificationPrimitive]] = [VerificationPrimitive]
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith(templates.__name__ + "."):
                found.add(sub)
                pending.append(sub)
    return {cls for cls in found if cls is not TracePrimitive and not inspect.isabstract(cls)}


def test_every_primitive_is_registered_and_listed_alike() -> None:
    registered = {*PRIMITIVES, *TRACE_PRIMITIVES}
    assert _defined_primitives() == registered
    assert len(PRIMITIVES) == len(set(PRIMITIVES)) == 20
    # Every registered primitive is a name templates written for the original import.
    for cls in registered:
        assert KARENINA_NAMES[cls.__name__] is cls
        assert getattr(templates, cls.__name__) is cls
    # Conditions take every value primitive but the one that loads a model.
    assert {cls.__name__ for cls in PRIMITIVES} - {c.__name__ for c in CONDITION_PRIMITIVES} == {
        "SemanticMatch"
    }
    with pytest.raises(ValueError, match="unknown verify_with type") as refused:
        primitive_from({"type": "NoSuchPrimitive"})
    known = str(refused.value).split("(known: ", 1)[1].rstrip(")").split(", ")
    assert known == sorted(cls.__name__ for cls in CONDITION_PRIMITIVES)
    assert isinstance(primitive_from({"type": "BooleanMatch"}), templates.BooleanMatch)
    with pytest.raises(ValueError, match="unknown verify_with type 'SemanticMatch'"):
        primitive_from({"type": "SemanticMatch"})
