"""The fingerprint of a result: digests of everything that decides its verdict.

Each part is hashed apart so that two results of the same unit can say *what*
differs between them (a changed template, a changed judge, a changed answer),
and one ``digest`` over all parts says *whether* anything does.
docs/results.md ("What decided a verdict: fingerprints") lists what goes into
each part. Digests are the first 16 hex characters of a SHA-256 over key-sorted
JSON.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from .._benchmark import Question
    from .._config import ModelConfig, VerificationConfig
    from .._rubric import DynamicRubric, Rubric

__all__ = [
    "FINGERPRINT_PARTS",
    "MODEL_FIELDS_NOT_IN_REPLY",
    "ResultFingerprint",
    "compute_fingerprint",
    "digest_of",
    "verifleet_version",
]

FINGERPRINT_PARTS: tuple[str, ...] = (
    "question",
    "template",
    "rubric",
    "judge",
    "answering",
    "settings",
    "version",
)
"""The parts of a fingerprint, in the order their columns appear."""

MODEL_FIELDS_NOT_IN_REPLY = frozenset(
    {
        "id",
        "api_key_env",
        "chat_client",
        "max_concurrency",
        "adaptive_concurrency",
        "requests_per_minute",
        "tokens_per_minute",
    }
)
"""ModelConfig fields that change how a call is made (names, credentials, which
client carries it, endpoint limits), never what the model replies; left out of
fingerprints and of the call cache's keys."""
# Configuration fields that are not stage settings: the models (their own
# parts), replicates, names, and how the run is executed and billed.
_CONFIG_NOT_SETTINGS = frozenset(
    {
        "answering_models",
        "parsing_models",
        "replicate_count",
        "run_name",
        "max_concurrency",
        "retry_policy",
        "request_timeout",
        "unit_deadline",
        "pricing",
        "cache",
        "record_model_calls",
        "max_cost_usd",
        "reverify_of",
        "prompt_config",
        "few_shot_config",
    }
)
_JUDGE_PROMPTS = (
    "parsing",
    "abstention_detection",
    "sufficiency_detection",
    "embedding_equivalence",
    "rubric_evaluation",
    "deep_judgment",
    "dynamic_rubric_presence",
)


def digest_of(value: object) -> str:
    """The 16-hex-character SHA-256 of ``value`` as key-sorted JSON (values JSON
    cannot hold are written with ``str``)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def verifleet_version() -> str:
    """verifleet's installed version (from the package metadata), or ``unknown``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("verifleet")
    except PackageNotFoundError:
        return "unknown"


_VERSION = verifleet_version()


class ResultFingerprint(BaseModel):
    """Per-part digests of what decided one result, and one digest over them.

    Every field is optional so that a columnar file's null columns read back;
    results written before fingerprints existed have none at all
    (``metadata.fingerprint`` is None).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str | None = None
    template: str | None = None
    rubric: str | None = None
    judge: str | None = None
    answering: str | None = None
    settings: str | None = None
    version: str | None = None
    digest: str | None = None

    def parts(self) -> dict[str, str | None]:
        """The part digests by name (without ``digest``)."""
        return {name: getattr(self, name) for name in FINGERPRINT_PARTS}

    def changed_parts(self, other: ResultFingerprint | None) -> list[str]:
        """The parts whose digests differ from ``other``'s (all of them when
        ``other`` is None), in :data:`FINGERPRINT_PARTS` order."""
        if other is None:
            return list(FINGERPRINT_PARTS)
        return [name for name in FINGERPRINT_PARTS if getattr(self, name) != getattr(other, name)]


# Parts that depend only on the configuration and the two models, by the
# objects' ids; each entry holds the objects themselves so that an id cannot be
# reused while its entry lives. Computing them is most of a fingerprint's cost.
_SHARED_PARTS: dict[tuple[int, int, int], tuple[tuple[object, ...], dict[str, str]]] = {}
_SHARED_MAX = 64


def _shared_parts(
    answering: ModelConfig, parsing: ModelConfig, config: VerificationConfig
) -> dict[str, str]:
    key = (id(config), id(answering), id(parsing))
    hit = _SHARED_PARTS.get(key)
    if hit is not None:
        return hit[1]
    prompts = config.prompt_config.model_dump(mode="json") if config.prompt_config else {}
    settings = {
        k: v for k, v in config.model_dump(mode="json").items() if k not in _CONFIG_NOT_SETTINGS
    }
    parts = {
        "judge": digest_of(
            {"model": _model_part(parsing), "prompts": {k: prompts.get(k) for k in _JUDGE_PROMPTS}}
        ),
        "answering": digest_of(
            {
                "model": _model_part(answering),
                "generation": prompts.get("generation"),
                "few_shot": _dump(config.few_shot_config),
            }
        ),
        "settings": digest_of(settings),
    }
    if len(_SHARED_PARTS) >= _SHARED_MAX:
        _SHARED_PARTS.pop(next(iter(_SHARED_PARTS)))
    _SHARED_PARTS[key] = ((config, answering, parsing), parts)
    return parts


def _model_part(model: ModelConfig) -> dict[str, object]:
    dumped = model.model_dump(mode="json")
    return {k: v for k, v in sorted(dumped.items()) if k not in MODEL_FIELDS_NOT_IN_REPLY}


def _dump(value: BaseModel | None) -> object:
    return None if value is None else value.model_dump(mode="json")


def compute_fingerprint(
    question: Question,
    answering: ModelConfig,
    parsing: ModelConfig,
    config: VerificationConfig,
    *,
    rubric: Rubric | None = None,
    dynamic_rubric: DynamicRubric | None = None,
    version: str | None = None,
) -> ResultFingerprint:
    """The fingerprint of a result of ``question`` under ``config``.

    Args:
        question: The benchmark question.
        answering: The answering model's configuration.
        parsing: The parsing (judge) model's configuration.
        config: The verification configuration.
        rubric: The rubric merged for the question (``Benchmark.rubric_for``).
        dynamic_rubric: The dynamic rubric merged for the question.
        version: verifleet's version; the installed one when None.

    Returns:
        The fingerprint; pure: the same inputs always give the same digests.
    """
    template = question.template_id if config.template_stages_enabled else None
    rubric_part = (
        {
            "rubric": _dump(rubric),
            "dynamic": _dump(dynamic_rubric or question.question_dynamic_rubric),
        }
        if config.rubric_stages_enabled
        else None
    )
    shared = _shared_parts(answering, parsing, config)
    parts = {
        "question": digest_of(
            {
                "text": question.text,
                "raw_answer": question.raw_answer,
                "few_shot": question.few_shot_examples,
            }
        ),
        "template": digest_of({"template_id": template}) if template else "none",
        "rubric": digest_of(rubric_part) if rubric_part is not None else "none",
        "judge": shared["judge"],
        "answering": shared["answering"],
        "settings": shared["settings"],
        "version": version if version is not None else _VERSION,
    }
    return ResultFingerprint(**parts, digest=digest_of(parts))
