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

# name -> the submodule that defines it, loaded on first use: a run without an
# embedding check never imports numpy
_LAZY: dict[str, str] = {
    "CheckError": ".errors",
    "CheckReplyError": ".errors",
    "DeepJudgmentError": ".errors",
    "EmbeddingModelError": ".errors",
    "CheckOutcome": ".outcomes",
    "DeepJudgmentOutcome": ".outcomes",
    "EmbeddingOutcome": ".outcomes",
    "ABSTENTION_STAGE": ".abstention",
    "detect_abstention": ".abstention",
    "SUFFICIENCY_STAGE": ".sufficiency",
    "detect_sufficiency": ".sufficiency",
    "EMBEDDING_STAGE": ".embedding",
    "EmbeddingModel": ".embedding",
    "run_embedding_check": ".embedding",
    "DEEP_JUDGMENT_STAGE": ".deep_judgment_excerpts",
    "excerpt_similarity": ".deep_judgment_excerpts",
    "SearchFunction": ".deep_judgment_search",
    "deep_judgment_parse": ".deep_judgment",
}

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


__getattr__, __dir__ = _lazy.exports(__name__, _LAZY)
