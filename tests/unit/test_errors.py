"""One exception tree: every exception class verifleet defines joins VerifleetError."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest
from _support.layout import package_dirs

from verifleet import errors

ROOT = Path(__file__).resolve().parents[2]

#: Exceptions that must stay outside the tree, each for a reason.
OUTSIDE_THE_TREE = {
    # Derives from BaseException on purpose: template code's `except Exception`
    # must not swallow the budget's stop.
    "verifleet.templates.budget.TemplateBudgetExceeded",
    # A KeyboardInterrupt on purpose: SIGTERM must unwind a run as Ctrl-C does,
    # through every `except Exception`, so that children are stopped on the way.
    "verifleet.orchestrator.cli.Terminated",
}


def _all_modules() -> list[str]:
    mapping = package_dirs()
    names: set[str] = set()
    for package, folder in mapping.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts and parts[-1] == "__main__":
                continue
            # Only the modules of this package (subpackages listed separately).
            top = ".".join((package, *parts))
            names.add(top)
    return sorted(names)


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in _all_modules():
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            # Warnings are exceptions to Python, but not errors: they stay warnings.
            is_error = issubclass(value, BaseException) and not issubclass(value, Warning)
            if is_error and value.__module__ == name:
                found[f"{name}.{value.__qualname__}"] = value
    return found


def test_the_scan_finds_the_classes_it_should() -> None:
    # Guards the test itself: a scan that found nothing would pass vacuously.
    found = _exception_classes()
    assert "verifleet.errors.ModelCallError" in found
    assert any(key.endswith("McpServerError") for key in found)
    assert len(found) >= 25


@pytest.mark.parametrize("qualified", sorted(_exception_classes()))
def test_every_exception_class_joins_the_tree(qualified: str) -> None:
    cls = _exception_classes()[qualified]
    if qualified in OUTSIDE_THE_TREE:
        assert not issubclass(cls, errors.VerifleetError)
    else:
        assert issubclass(cls, errors.VerifleetError), f"{qualified} is not a VerifleetError"


def test_the_public_errors_are_defined_in_verifleet_errors() -> None:
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.VerifleetError)
        assert cls.__module__ == "verifleet.errors"
    # The named errors of the issue are all there, under the shared base.
    for name in ("ModelCallError", "StructuredOutputError", "ManualAnswerError", "StageFailure"):
        assert name in errors.__all__
    for name in ("TraceError", "StoredResultError", "LocalLLMError", "JobRejectedError"):
        assert name in errors.__all__


def test_old_import_sites_give_the_same_classes() -> None:
    from verifleet.orchestrator import LocalLLMError
    from verifleet.pipeline import ModelCallError
    from verifleet.schemas import TemplateValidationError

    assert LocalLLMError is errors.LocalLLMError
    assert ModelCallError is errors.ModelCallError
    assert TemplateValidationError is errors.TemplateValidationError
