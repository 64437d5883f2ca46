"""verifleet: distributed batch verification of LLM answers.

The public API lives in the subpackages:

- :mod:`verifleet.schemas` — benchmarks, templates, rubrics, configuration, results.
- :mod:`verifleet.pipeline` — the 13-stage verification pipeline.
- :mod:`verifleet.workers` — the Celery app and the task that runs one unit.
- :mod:`verifleet.orchestrator` — submission, the result store, exports, the CLI.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
