"""verifleet.orchestrator — job submission, the result store, exports, the local
runner and the CLI."""

__all__: list[str] = []
