"""Text normalisers applied before string comparisons.

A normaliser is either a name (``"lowercase"``, ``"strip"``,
``"remove_punctuation"``, ``"collapse_whitespace"``, ``"remove_whitespace"``,
``"unicode_nfkc"``) or a :class:`SynonymMap`. They compose left to right, so
``["lowercase", SynonymMap(...)]`` maps synonyms after lowercasing.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Callable, Sequence
from typing import TypeAlias

from pydantic import BaseModel, ConfigDict

__all__ = [
    "NORMALIZER_NAMES",
    "Normalizer",
    "SynonymMap",
    "apply_normalizer",
    "apply_normalizers",
    "default_normalizers",
]

_PUNCTUATION_TABLE = str.maketrans("", "", string.punctuation)
_WHITESPACE_RUN = re.compile(r"\s+")


class SynonymMap(BaseModel):
    """Maps whole values to a canonical form (``{"asa": "aspirin"}``).

    The lookup is on the entire (already normalised) text, not on substrings, so
    it should usually come after ``"lowercase"`` and ``"strip"``.
    """

    model_config = ConfigDict(frozen=True)

    mapping: dict[str, str]

    def apply(self, text: str) -> str:
        """Return the canonical form of ``text``, or ``text`` when unmapped."""
        return self.mapping.get(text, text)


Normalizer: TypeAlias = str | SynonymMap

_NAMED: dict[str, Callable[[str], str]] = {
    "lowercase": str.lower,
    "strip": str.strip,
    "remove_punctuation": lambda text: text.translate(_PUNCTUATION_TABLE),
    "collapse_whitespace": lambda text: _WHITESPACE_RUN.sub(" ", text).strip(),
    "remove_whitespace": lambda text: _WHITESPACE_RUN.sub("", text),
    "unicode_nfkc": lambda text: unicodedata.normalize("NFKC", text),
}

NORMALIZER_NAMES: frozenset[str] = frozenset(_NAMED)


def default_normalizers() -> list[Normalizer]:
    """The default for exact and ordered matches: lowercase, then strip."""
    return ["lowercase", "strip"]


def apply_normalizer(normalizer: Normalizer, text: str) -> str:
    """Apply one normaliser to ``text``.

    Raises:
        ValueError: ``normalizer`` is a name that is not in :data:`NORMALIZER_NAMES`.
    """
    if isinstance(normalizer, SynonymMap):
        return normalizer.apply(text)
    try:
        return _NAMED[normalizer](text)
    except KeyError:
        known = ", ".join(sorted(_NAMED))
        raise ValueError(f"unknown normalizer {normalizer!r} (known: {known})") from None


def apply_normalizers(normalizers: Sequence[Normalizer], text: str) -> str:
    """Apply ``normalizers`` in order; an empty sequence returns ``text`` unchanged.

    Raises:
        ValueError: One of the names is unknown.
    """
    for normalizer in normalizers:
        text = apply_normalizer(normalizer, text)
    return text
