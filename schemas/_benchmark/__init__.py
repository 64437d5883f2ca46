"""Questions, benchmarks and the benchmark loaders.

Re-exported by :mod:`verifleet.schemas`; import from there.
"""

from ._benchmark import Benchmark
from ._loader import dump_benchmark, load_benchmark
from ._question import Question
from ._validation import BenchmarkCheck, BenchmarkProblem, check_benchmark, template_problem

__all__ = [
    "Benchmark",
    "BenchmarkCheck",
    "BenchmarkProblem",
    "Question",
    "check_benchmark",
    "dump_benchmark",
    "load_benchmark",
    "template_problem",
]
