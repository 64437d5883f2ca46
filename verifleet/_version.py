"""The package's version, in a module that imports nothing: the services report it
without importing the package's lazy API (``verifleet/__init__.py``) and its layers."""

__all__ = ["__version__"]

__version__ = "0.1.0"
