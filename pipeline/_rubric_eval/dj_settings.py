"""Which LLM traits get deep judgment, and with which settings.

``config.deep_judgment_rubric_mode`` decides:

* ``disabled``: no trait.
* ``enable_all``: every LLM trait; excerpts follow
  ``deep_judgment_rubric_global_excerpts``; limits are the config defaults.
* ``use_checkpoint``: the trait's own ``deep_judgment_*`` settings (as loaded from
  the benchmark); unset limits fall back to the config defaults.
* ``custom``: ``deep_judgment_rubric_config`` =
  ``{"global": {trait: {...}}, "question_specific": {question_id: {trait: {...}}}}``;
  the question-specific entry wins over the global one; a trait in neither is off.
  Entries follow :class:`~verifleet.schemas.DeepJudgmentTraitConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from verifleet.schemas import ConfigError, DeepJudgmentTraitConfig, VerificationConfig

from .protocols import LLMTraitLike

__all__ = ["DeepJudgmentSettings", "resolve_deep_judgment"]


@dataclass(frozen=True)
class DeepJudgmentSettings:
    """Resolved deep-judgment settings of one trait."""

    enabled: bool
    excerpt_enabled: bool = True
    max_excerpts: int = 7
    fuzzy_match_threshold: float = 0.80
    excerpt_retry_attempts: int = 2
    search_enabled: bool = False


_OFF = DeepJudgmentSettings(enabled=False)


def resolve_deep_judgment(
    trait: LLMTraitLike, *, question_id: str, config: VerificationConfig
) -> DeepJudgmentSettings:
    """The deep-judgment settings ``trait`` gets for ``question_id`` under ``config``.

    Raises:
        ConfigError: a ``custom`` entry for this trait is not a valid
            ``DeepJudgmentTraitConfig`` (the message names its path).
    """
    mode = config.deep_judgment_rubric_mode
    if mode == "enable_all":
        return _with_defaults(
            config,
            excerpt_enabled=config.deep_judgment_rubric_global_excerpts,
            max_excerpts=None,
            threshold=None,
            retries=None,
            search=False,
        )
    if mode == "use_checkpoint":
        if not trait.deep_judgment_enabled:
            return _OFF
        return _with_defaults(
            config,
            excerpt_enabled=trait.deep_judgment_excerpt_enabled,
            max_excerpts=trait.deep_judgment_max_excerpts,
            threshold=trait.deep_judgment_fuzzy_match_threshold,
            retries=trait.deep_judgment_excerpt_retry_attempts,
            search=trait.deep_judgment_search_enabled,
        )
    if mode == "custom":
        entry = _custom_entry(trait.name, question_id, config.deep_judgment_rubric_config or {})
        if entry is None or not entry.enabled:
            return _OFF
        return _with_defaults(
            config,
            excerpt_enabled=entry.excerpt_enabled,
            max_excerpts=entry.max_excerpts,
            threshold=entry.fuzzy_match_threshold,
            retries=entry.excerpt_retry_attempts,
            search=entry.search_enabled,
        )
    return _OFF


def _custom_entry(
    trait_name: str, question_id: str, tree: dict[str, object]
) -> DeepJudgmentTraitConfig | None:
    candidates = [
        ("question_specific", question_id, trait_name),
        ("global", trait_name),
    ]
    for keys in candidates:
        raw = _lookup(tree, keys)
        if raw is None:
            continue
        path = ".".join(("deep_judgment_rubric_config", *keys))
        if isinstance(raw, DeepJudgmentTraitConfig):
            return raw
        try:
            return DeepJudgmentTraitConfig.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'entry'}: {e['msg']}" for e in exc.errors()
            )
            raise ConfigError(f"{path}: {problems}") from None
    return None


def _lookup(tree: object, keys: tuple[str, ...]) -> object:
    # A level that is not a mapping means "no entry here", like a missing key.
    node = tree
    for key in keys:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _with_defaults(
    config: VerificationConfig,
    *,
    excerpt_enabled: bool,
    max_excerpts: int | None,
    threshold: float | None,
    retries: int | None,
    search: bool,
) -> DeepJudgmentSettings:
    return DeepJudgmentSettings(
        enabled=True,
        excerpt_enabled=excerpt_enabled,
        max_excerpts=max_excerpts or config.deep_judgment_rubric_max_excerpts_default,
        fuzzy_match_threshold=(
            threshold
            if threshold is not None
            else config.deep_judgment_rubric_fuzzy_match_threshold_default
        ),
        excerpt_retry_attempts=(
            retries
            if retries is not None
            else config.deep_judgment_rubric_excerpt_retry_attempts_default
        ),
        search_enabled=search,
    )
