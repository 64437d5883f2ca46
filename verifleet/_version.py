"""verifleet's version, in a module of its own: the services and the CLI report it
without importing the package's root (which sits above them: ``verifleet.run``)."""

__version__ = "0.1.0"
