"""Performance harnesses and the fault-injecting model endpoint they (and the tests) use.

Nothing here is part of the installed ``verifleet`` package: run it from the
repository root (``python bench/endpoint.py --help``) or import it there
(``from bench.endpoint import run_endpoint_in_thread``).
"""
