"""verifleet: distributed batch verification of LLM answers.

The two calls most users need::

    import verifleet

    results = verifleet.run("bench.jsonld", config)        # in this process
    job = verifleet.submit("bench.jsonld", config, url)    # on the fleet
    job.wait()
    results = job.result_set()

(``verifleet.run`` is the equivalent of the original framework's
``Benchmark.run_verification(config)``.) The rest of the public API lives in the
subpackages:

- :mod:`verifleet.schemas` — benchmarks, templates, rubrics, configuration, results.
- :mod:`verifleet.pipeline` — the 13-stage verification pipeline.
- :mod:`verifleet.workers` — the Celery app and the task that runs one unit.
- :mod:`verifleet.orchestrator` — submission, the result store, exports, the CLI.

Everything here is imported on first use, so ``import verifleet`` stays cheap
(the CLI and workers import only what they need).
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:
    from verifleet._api import run, submit
    from verifleet._version import __version__
    from verifleet.orchestrator import Job
    from verifleet.schemas import (
        Benchmark,
        VerificationConfig,
        VerificationResultSet,
        load_benchmark,
    )

# name -> module that defines it, imported when the name is first used.
_LAZY = {
    "__version__": "verifleet._version",
    "run": "verifleet._api",
    "submit": "verifleet._api",
    "Job": "verifleet.orchestrator",
    "Benchmark": "verifleet.schemas",
    "VerificationConfig": "verifleet.schemas",
    "VerificationResultSet": "verifleet.schemas",
    "load_benchmark": "verifleet.schemas",
}

__all__ = [
    "Benchmark",
    "Job",
    "VerificationConfig",
    "VerificationResultSet",
    "__version__",
    "load_benchmark",
    "run",
    "submit",
]


def __getattr__(name: str) -> typing.Any:
    """Import a public name on first use.

    Raises:
        AttributeError: ``name`` is not part of the API.
    """
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'verifleet' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
