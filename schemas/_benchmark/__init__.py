"""Questions, benchmarks and the benchmark loaders.

Re-exported by :mod:`verifleet.schemas`; import from there.
"""

from ._benchmark import Benchmark
from ._loader import dump_benchmark, load_benchmark
from ._question import Question

__all__ = ["Benchmark", "Question", "dump_benchmark", "load_benchmark"]
