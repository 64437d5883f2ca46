"""verifleet.pipeline — the 13-stage verification pipeline, its checks and model
adapters. Imports only :mod:`verifleet.schemas`."""

__all__: list[str] = []
