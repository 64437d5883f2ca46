"""The verifleet exception hierarchy, as :mod:`verifleet.schemas` exports it.

Defined in :mod:`verifleet.errors` (one tree for the whole package); these are the
input and result errors the data models raise.
"""

from verifleet.errors import (
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
