"""Pre-parse and enhancement checks: abstention, sufficiency, embedding similarity
and deep-judgment parsing.

Private to :mod:`verifleet.pipeline`: the stages call these functions, and the
pipeline package re-exports what users should see. Every judge call goes through
the :class:`~verifleet.pipeline._llm_protocol.ChatCaller` protocol.
"""

from __future__ import annotations

import typing

from verifleet import _lazy

if typing.TYPE_CHECKING:
    from .errors import CheckError, CheckReplyError, DeepJudgmentError, EmbeddingModelError
    from .outcomes import CheckOutcome, DeepJudgmentOutcome, EmbeddingOutcome
    from .abstention import ABSTENTION_STAGE, detect_abstention
    from .sufficiency import SUFFICIENCY_STAGE, detect_sufficiency
    from .embedding import EMBEDDING_STAGE, EmbeddingModel, run_embedding_check
    from .deep_judgment_excerpts import DEEP_JUDGMENT_STAGE, excerpt_similarity
    from .deep_judgment_search import SearchFunction
    from .deep_judgment import deep_judgment_parse

__all__ = [
    "ABSTENTION_STAGE",
    "DEEP_JUDGMENT_STAGE",
    "EMBEDDING_STAGE",
    "SUFFICIENCY_STAGE",
    "CheckError",
    "CheckOutcome",
    "CheckReplyError",
    "DeepJudgmentError",
    "DeepJudgmentOutcome",
    "EmbeddingModel",
    "EmbeddingModelError",
    "EmbeddingOutcome",
    "SearchFunction",
    "deep_judgment_parse",
    "detect_abstention",
    "detect_sufficiency",
    "excerpt_similarity",
    "run_embedding_check",
]


# Each name of __all__ loads on first use, from the module the TYPE_CHECKING block
# imports it from: a run without an embedding check never imports numpy.
__getattr__, __dir__ = _lazy.exports(__name__)
