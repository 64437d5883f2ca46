"""Why the bundled local model could not be built, found or started."""

from verifleet.errors import LocalLLMError

__all__ = ["LocalLLMError"]
