"""The verifleet exception hierarchy (re-exported from :mod:`verifleet.schemas`)."""

from verifleet.schemas._errors import (
    BenchmarkLoadError,
    ConfigError,
    ExportError,
    RubricError,
    TemplateValidationError,
    UntrustedCodeError,
    VerifleetError,
)

__all__ = [
    "BenchmarkLoadError",
    "ConfigError",
    "ExportError",
    "RubricError",
    "TemplateValidationError",
    "UntrustedCodeError",
    "VerifleetError",
]
