"""Verification and model configuration.

Field names and defaults follow the specification (``shared/spec``); verifleet adds
the knobs a distributed runner needs (retry policy, request timeout, per-unit
deadline, concurrency, endpoint limits). Validation errors name the offending
field, e.g. ``parsing_models[0].model_name: must not be empty``.
"""

from __future__ import annotations

import hashlib
import os
import random
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ._config_compat import adapt_original_config, adapt_original_model
from ._errors import ConfigError
from ._identity import ModelIdentity
from ._pricing import PriceTable

__all__ = [
    "DEFAULT_ANSWERING_SYSTEM_PROMPT",
    "DEFAULT_PARSING_SYSTEM_PROMPT",
    "DeepJudgmentTraitConfig",
    "EvaluationMode",
    "FewShotConfig",
    "InterfaceKind",
    "ModelConfig",
    "PromptConfig",
    "QuestionFewShotConfig",
    "RetryPolicy",
    "VerificationConfig",
    "config_error_from",
    "declare_interface",
    "interface_kind",
    "interface_names",
]

EvaluationMode = Literal["template_only", "template_and_rubric", "rubric_only"]
Interface = str

InterfaceKind = Literal["langchain", "openai_compatible", "recorded", "registered"]
"""How an interface's models are called: langchain's ``init_chat_model``, an
OpenAI-compatible HTTP API, recorded answers, or a factory given to
``verifleet.pipeline.register_interface``."""

#: The registry of model interfaces: every name ``ModelConfig.interface`` accepts
#: and how its models are called. The one list: the pipeline builds callers, and
#: the preflight and the clients pick the OpenAI-compatible ones, from it.
_INTERFACES: dict[str, InterfaceKind] = {
    "langchain": "langchain",
    "openai_endpoint": "openai_compatible",
    "openrouter": "openai_compatible",
    "manual": "recorded",
}


def declare_interface(name: str) -> None:
    """Let ``ModelConfig.interface`` take ``name`` (a built-in keeps its kind).

    Called by ``verifleet.pipeline.register_interface``, which also says how such
    models are called; configurations are validated against the declared names, so
    a typo fails when the file loads, not at the first model call.
    """
    _INTERFACES.setdefault(name, "registered")


def interface_names() -> list[str]:
    """The interface names a ``ModelConfig`` accepts, sorted."""
    return sorted(_INTERFACES)


def interface_kind(name: str) -> InterfaceKind | None:
    """How models of interface ``name`` are called; None for an undeclared name."""
    return _INTERFACES.get(name)


ChatClient = Literal["auto", "http", "langchain"]

DEFAULT_ANSWERING_SYSTEM_PROMPT = (
    "You are an expert assistant. Answer the question accurately and concisely."
)
DEFAULT_PARSING_SYSTEM_PROMPT = (
    "You are a validation assistant. Parse and validate responses against the given "
    "Pydantic template."
)
DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
DEFAULT_EMBEDDING_THRESHOLD = 0.85


class RetryPolicy(BaseModel):
    """How transient model errors (429, 5xx, timeouts, resets) are retried.

    The delay before attempt ``n`` (1-based, ``n >= 2``) is
    ``min(max_delay, initial_delay * multiplier ** (n - 2))`` scaled by a random
    factor in ``[1 - jitter, 1 + jitter]``; a ``Retry-After`` header, when the
    endpoint sends one, is honoured instead when it is longer.
    """

    model_config = ConfigDict(extra="forbid")

    max_attempts: int = Field(default=4, ge=1, le=20)
    initial_delay: float = Field(default=1.0, ge=0.0)
    multiplier: float = Field(default=2.0, ge=1.0)
    max_delay: float = Field(default=30.0, ge=0.0)
    jitter: float = Field(default=0.25, ge=0.0, le=1.0)

    def delay_before(self, attempt: int, rand: float) -> float:
        """Seconds to wait before ``attempt`` (2 = first retry); ``rand`` in [0, 1)."""
        if attempt < 2:
            return 0.0
        base = min(self.max_delay, self.initial_delay * self.multiplier ** (attempt - 2))
        return max(0.0, base * (1.0 - self.jitter + 2.0 * self.jitter * rand))


class ModelConfig(BaseModel):
    """One answering or parsing model.

    API keys are never stored here: ``api_key_env`` names the environment variable
    that holds the key (the provider's usual variable is used when it is ``None``).

    Interfaces:
        ``langchain``: any provider ``init_chat_model`` knows (``model_provider``).
        ``openai_endpoint``: any OpenAI-compatible server at ``endpoint_base_url``.
        ``openrouter``: OpenRouter's OpenAI-compatible API.
        ``manual``: replays pre-recorded answers or traces from ``manual_traces_path``.
        Any other name registered with ``verifleet.pipeline.register_interface``.

    ``chat_client`` chooses how ``openai_endpoint`` / ``openrouter`` models are
    called: ``auto`` (verifleet's direct HTTP client unless the model needs
    langchain's, see ``verifleet.pipeline.direct_http_applies``), ``http`` or
    ``langchain``. Other interfaces ignore it.
    """

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    model_name: str
    model_provider: str | None = None
    interface: Interface = "langchain"
    chat_client: ChatClient = "auto"
    endpoint_base_url: str | None = None
    api_key_env: str | None = None
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    system_prompt: str | None = None
    mcp_urls_dict: dict[str, str] | None = None
    mcp_tool_filter: list[str] | None = None
    agent_recursion_limit: int = Field(default=25, ge=1)
    manual_traces_path: str | None = None
    extra_kwargs: dict[str, object] = Field(default_factory=dict)
    # Limits of this model's endpoint, fleet-wide (see ``verifleet.limits``).
    # Calls in flight follow an adaptive window that grows until the endpoint
    # pushes back (429, Retry-After, rising latency), never above
    # ``max_concurrency`` (None: ``verifleet.limits.DEFAULT_MAX_CONCURRENCY``);
    # ``adaptive_concurrency=False`` holds exactly ``max_concurrency`` (None:
    # unlimited). Per-minute budgets: None is unlimited; tokens count each call's
    # estimate until the provider reports its usage.
    max_concurrency: int | None = Field(default=None, ge=1)
    adaptive_concurrency: bool = True
    requests_per_minute: int | None = Field(default=None, ge=1)
    tokens_per_minute: int | None = Field(default=None, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _original_fields(cls, data: object) -> object:
        # Presets of the original framework hold fields we do not have.
        return adapt_original_model(data, cls.model_fields) if isinstance(data, dict) else data

    @field_validator("interface")
    @classmethod
    def _declared_interface(cls, value: str) -> str:
        if value not in _INTERFACES:
            raise ValueError(
                f"unknown interface '{value}' (known: {', '.join(interface_names())}; "
                "others register with verifleet.pipeline.register_interface)"
            )
        return value

    @field_validator("model_name")
    @classmethod
    def _name_not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @model_validator(mode="after")
    def _interface_requirements(self) -> ModelConfig:
        if self.interface == "openai_endpoint" and not self.endpoint_base_url:
            raise ValueError("interface 'openai_endpoint' needs endpoint_base_url")
        if self.interface == "manual" and not self.manual_traces_path:
            raise ValueError("interface 'manual' needs manual_traces_path")
        if self.id is None:
            self.id = self.model_name
        return self

    @classmethod
    def parse(cls, spec: str, **overrides: object) -> ModelConfig:
        """Build a config from a command-line model spec.

        Accepted forms: ``provider:model`` (langchain), ``http://host:port/v1#model``
        (OpenAI-compatible endpoint) and ``manual:PATH`` (pre-recorded answers).

        Raises:
            ConfigError: the spec matches none of the forms.
        """
        text = spec.strip()
        try:
            if "#" in text and text.split("#", 1)[0].startswith(("http://", "https://")):
                url, name = text.split("#", 1)
                return cls(
                    model_name=name,
                    interface="openai_endpoint",
                    endpoint_base_url=url,
                    **overrides,
                )
            if text.startswith("manual:"):
                path = text[len("manual:") :]
                return cls(
                    model_name=os.path.basename(path) or "manual",
                    interface="manual",
                    manual_traces_path=path,
                    **overrides,
                )
            if ":" in text:
                provider, name = text.split(":", 1)
                if provider and name:
                    return cls(
                        model_name=name, model_provider=provider, interface="langchain", **overrides
                    )
        except ValidationError as exc:
            raise config_error_from(exc, prefix=f"model '{spec}'") from None
        raise ConfigError(
            f"model '{spec}': expected 'provider:model', 'http(s)://url#model' or 'manual:PATH'"
        )

    def identity(self, *, role: Literal["answering", "parsing"] = "answering") -> ModelIdentity:
        """The :class:`ModelIdentity` recorded in results (parsing models have no tools)."""
        tools = sorted(self.mcp_urls_dict) if role == "answering" and self.mcp_urls_dict else []
        return ModelIdentity(interface=self.interface, model_name=self.model_name, tools=tools)


class QuestionFewShotConfig(BaseModel):
    """Few-shot settings of one question; ``inherit`` takes the global ones."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["all", "k-shot", "custom", "none", "inherit"] = "inherit"
    k: int | None = Field(default=None, ge=1)
    selected_examples: list[str | int] | None = None
    external_examples: list[dict[str, str]] | None = None
    excluded_examples: list[str | int] | None = None


class FewShotConfig(BaseModel):
    """Few-shot prompting of the answering model from the questions' examples.

    Examples are ``{"question": ..., "answer": ...}`` dicts. ``custom`` selects
    examples by index or by MD5 of the example question. ``k-shot`` samples k
    examples with a random generator seeded by the question id, as the original
    framework does, so a question sees the same examples on every run and worker.

    The original's current field names load too: ``source`` (``disabled`` /
    ``question_pool`` / ``global`` / ``both``), ``pool_mode``, ``pool_k`` and
    ``global_examples`` map onto ``enabled``, ``global_mode``, ``global_k``,
    ``global_external_examples`` and ``source``.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    source: Literal["question_pool", "global", "both"] = "both"
    global_mode: Literal["all", "k-shot", "custom", "none"] = "all"
    global_k: int = Field(default=3, ge=1)
    question_configs: dict[str, QuestionFewShotConfig] = Field(default_factory=dict)
    global_external_examples: list[dict[str, str]] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _original_names(cls, data: object) -> object:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for original, ours in (
            ("pool_mode", "global_mode"),
            ("pool_k", "global_k"),
            ("global_examples", "global_external_examples"),
        ):
            if original in data:
                value = data.pop(original)
                data.setdefault(ours, value)
        if data.get("source") == "disabled":
            data["enabled"] = False
            data["source"] = "both"
        return data

    def effective(self, question_id: str) -> QuestionFewShotConfig:
        """The settings that apply to ``question_id`` with inheritance resolved."""
        own = self.question_configs.get(question_id, QuestionFewShotConfig())
        mode = self.global_mode if own.mode == "inherit" else own.mode
        return own.model_copy(update={"mode": mode, "k": own.k or self.global_k})

    def resolve(
        self, question_id: str, examples: list[dict[str, str]] | None
    ) -> list[dict[str, str]]:
        """The examples to show for ``question_id``: the question's own pool (unless
        ``source`` is ``global``), then the global ones (unless it is
        ``question_pool``). Deterministic for a given question id."""
        if not self.enabled:
            return []
        cfg = self.effective(question_id)
        pool = list(examples or []) if self.source != "global" else []
        if cfg.excluded_examples:
            pool = [
                ex
                for i, ex in enumerate(pool)
                if not _example_selected(i, ex, cfg.excluded_examples)
            ]
        if cfg.mode == "none":
            chosen: list[dict[str, str]] = []
        elif cfg.mode == "all":
            chosen = pool
        elif cfg.mode == "k-shot":
            chosen = _sample_k(pool, cfg.k or self.global_k, question_id)
        else:
            wanted = cfg.selected_examples or []
            chosen = [ex for i, ex in enumerate(pool) if _example_selected(i, ex, wanted)]
        global_examples = [] if self.source == "question_pool" else self.global_external_examples
        return chosen + list(cfg.external_examples or []) + list(global_examples)


def _sample_k(pool: list[dict[str, str]], k: int, question_id: str) -> list[dict[str, str]]:
    """k examples drawn the way the original draws them: the whole pool when it has
    at most k, else ``random.sample`` from a generator seeded with the low 31 bits
    of the MD5 of the question id (a private generator: the global one is not
    touched, and the draw is the same as the original's)."""
    if len(pool) <= k:
        return list(pool)
    seed = int(hashlib.md5(question_id.encode("utf-8")).hexdigest(), 16) & 0x7FFFFFFF
    return random.Random(seed).sample(pool, k)


def _example_selected(index: int, example: dict[str, str], keys: list[str | int]) -> bool:
    from ._identity import md5_hex

    digest = md5_hex(example.get("question", ""))
    return index in keys or digest in keys


class PromptConfig(BaseModel):
    """Extra instructions a user injects into the prompts of each pipeline task."""

    model_config = ConfigDict(extra="forbid")

    generation: str | None = None
    parsing: str | None = None
    abstention_detection: str | None = None
    sufficiency_detection: str | None = None
    embedding_equivalence: str | None = None
    rubric_evaluation: str | None = None
    deep_judgment: str | None = None
    dynamic_rubric_presence: str | None = None


class DeepJudgmentTraitConfig(BaseModel):
    """Deep-judgment settings of one rubric trait (``custom`` rubric mode)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    excerpt_enabled: bool = True
    max_excerpts: int | None = Field(default=None, ge=1)
    fuzzy_match_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    excerpt_retry_attempts: int | None = Field(default=None, ge=0)
    search_enabled: bool = False


_ENV_BOOL = {"1", "true", "yes", "on"}
_SEARCH_TOOLS = ("tavily", "local")


class VerificationConfig(BaseModel):
    """Everything that controls a verification run.

    ``EMBEDDING_CHECK``, ``EMBEDDING_CHECK_MODEL`` and ``EMBEDDING_CHECK_THRESHOLD``
    set the embedding check when the corresponding field is not given explicitly.
    Invalid values raise :class:`ConfigError` naming the field (use
    :meth:`VerificationConfig.build` for that; the plain constructor raises
    pydantic's ``ValidationError``).
    """

    model_config = ConfigDict(extra="forbid")

    answering_models: list[ModelConfig] = Field(default_factory=list)
    parsing_models: list[ModelConfig]
    replicate_count: int = Field(default=1, ge=1)
    parsing_only: bool = False
    run_name: str | None = None

    evaluation_mode: EvaluationMode = "template_only"
    rubric_enabled: bool = False
    rubric_trait_names: list[str] | None = None
    rubric_evaluation_strategy: Literal["batch", "sequential"] = "batch"

    use_full_trace_for_template: bool = False
    use_full_trace_for_rubric: bool = True

    abstention_enabled: bool = False
    sufficiency_enabled: bool = False

    embedding_check_enabled: bool = False
    embedding_check_model: str = DEFAULT_EMBEDDING_MODEL
    embedding_check_threshold: float = Field(default=DEFAULT_EMBEDDING_THRESHOLD, ge=0.0, le=1.0)

    deep_judgment_enabled: bool = False
    # False: the original's deep_judgment_mode "reasoning_only" (reasoning and
    # parameters from the whole response, no excerpts, so no excerpt auto-fail).
    deep_judgment_excerpts_enabled: bool = True
    deep_judgment_max_excerpts_per_attribute: int = Field(default=3, ge=1)
    deep_judgment_fuzzy_match_threshold: float = Field(default=0.80, ge=0.0, le=1.0)
    deep_judgment_excerpt_retry_attempts: int = Field(default=2, ge=0)
    deep_judgment_search_enabled: bool = False
    # Search providers (template and rubric deep judgment): "tavily" (web, needs
    # TAVILY_API_KEY) or "local" (BM25 over deep_judgment_search_documents, offline).
    deep_judgment_search_tool: str = "tavily"
    deep_judgment_search_documents: str | None = None
    deep_judgment_search_max_results: int = Field(default=3, ge=1, le=20)
    deep_judgment_search_url: str | None = None

    deep_judgment_rubric_mode: Literal["disabled", "enable_all", "use_checkpoint", "custom"] = (
        "disabled"
    )
    deep_judgment_rubric_global_excerpts: bool = True
    deep_judgment_rubric_config: dict[str, object] | None = None
    deep_judgment_rubric_max_excerpts_default: int = Field(default=7, ge=1)
    deep_judgment_rubric_fuzzy_match_threshold_default: float = Field(default=0.80, ge=0.0, le=1.0)
    deep_judgment_rubric_excerpt_retry_attempts_default: int = Field(default=2, ge=0)
    deep_judgment_rubric_search_tool: str = "tavily"

    few_shot_config: FewShotConfig | None = None
    prompt_config: PromptConfig | None = None

    # verifleet: execution
    # Local mode: the most units at once; below it, the endpoints' adaptive
    # windows decide (see ``verifleet.limits``).
    max_concurrency: int = Field(default=256, ge=1, le=4096)
    retry_policy: RetryPolicy = Field(default_factory=RetryPolicy)
    request_timeout: float = Field(default=120.0, gt=0.0)
    unit_deadline: float = Field(default=900.0, gt=0.0)
    # The original's cap on every scenario run: after this many turns a run stops
    # with status ``limit_reached``, before its next edge is looked at. None: each
    # scenario's own ``max_turns`` (20 for a checkpoint's scenarios) is the limit.
    scenario_turn_limit: int | None = Field(default=None, ge=1)

    # verifleet: cost and the model-call cache (docs/iterating.md)
    #: Prices per model (``--pricing FILE``); None: results carry no cost.
    pricing: PriceTable | None = None
    #: Reuse identical model calls' replies from the call cache (``--cache``).
    cache: bool = False
    #: Keep every model call's prompts and raw reply in the result
    #: (``template.model_calls``, bounded by ``VERIFLEET_RESULT_MAX_CALLS``);
    #: off saves their size (docs/viewer.md#prompts-and-replies).
    record_model_calls: bool = True
    #: Start no new unit once spent plus in-flight cost reaches this (``--max-cost``).
    max_cost_usd: float | None = Field(default=None, gt=0.0)
    #: A fleet job whose stored answers this job re-judges (``verifleet reverify
    #: --submit``): its workers call no answering model.
    reverify_of: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _environment_and_defaults(cls, data: object) -> object:
        if not isinstance(data, dict):
            return data
        data = adapt_original_config(data, cls.model_fields)
        env = os.environ
        if "embedding_check_enabled" not in data and "EMBEDDING_CHECK" in env:
            data["embedding_check_enabled"] = env["EMBEDDING_CHECK"].strip().lower() in _ENV_BOOL
        if "embedding_check_model" not in data and env.get("EMBEDDING_CHECK_MODEL"):
            data["embedding_check_model"] = env["EMBEDDING_CHECK_MODEL"]
        if "embedding_check_threshold" not in data and "EMBEDDING_CHECK_THRESHOLD" in env:
            data["embedding_check_threshold"] = env["EMBEDDING_CHECK_THRESHOLD"]
        # A rubric mode implies rubric evaluation; keep the original's flag consistent.
        if data.get("evaluation_mode") in ("template_and_rubric", "rubric_only"):
            data.setdefault("rubric_enabled", True)
        for key, prompt in (
            ("answering_models", DEFAULT_ANSWERING_SYSTEM_PROMPT),
            ("parsing_models", DEFAULT_PARSING_SYSTEM_PROMPT),
        ):
            models = data.get(key)
            if isinstance(models, list):
                data[key] = [_with_system_prompt(m, prompt) for m in models]
        return data

    @model_validator(mode="after")
    def _consistency(self) -> VerificationConfig:
        if not self.parsing_models:
            raise ValueError("parsing_models: at least one parsing model is required")
        if not self.parsing_only and not self.answering_models:
            raise ValueError(
                "answering_models: at least one answering model is required "
                "(unless parsing_only=True)"
            )
        if self.evaluation_mode == "template_only" and self.rubric_enabled:
            raise ValueError(
                "rubric_enabled: evaluation_mode='template_only' does not evaluate rubrics; "
                "use evaluation_mode='template_and_rubric'"
            )
        if self.evaluation_mode != "template_only" and not self.rubric_enabled:
            raise ValueError(
                f"rubric_enabled: evaluation_mode='{self.evaluation_mode}' needs rubric_enabled=True"
            )
        if self.deep_judgment_rubric_mode == "custom" and not self.deep_judgment_rubric_config:
            raise ValueError(
                "deep_judgment_rubric_config: required when deep_judgment_rubric_mode='custom'"
            )
        if self.deep_judgment_search_enabled and not self.deep_judgment_excerpts_enabled:
            raise ValueError(
                "deep_judgment_search_enabled: search checks excerpts, and "
                "deep_judgment_excerpts_enabled is False (deep_judgment_mode 'reasoning_only')"
            )
        for name in ("deep_judgment_search_tool", "deep_judgment_rubric_search_tool"):
            tool = str(getattr(self, name)).strip().lower()
            if tool not in _SEARCH_TOOLS:
                raise ValueError(
                    f"{name}: unknown search tool '{getattr(self, name)}' "
                    f"(known: {', '.join(_SEARCH_TOOLS)})"
                )
            if (
                tool == "local"
                and not self.deep_judgment_search_documents
                and (
                    self.deep_judgment_search_enabled or name == "deep_judgment_rubric_search_tool"
                )
            ):
                raise ValueError(
                    f"deep_judgment_search_documents: {name} 'local' needs a document "
                    "collection (a folder of .txt/.md files or a .jsonl file)"
                )
        return self

    @classmethod
    def build(cls, **data: object) -> VerificationConfig:
        """Validate ``data`` into a config.

        Raises:
            ConfigError: listing every invalid field by its dotted path.
        """
        try:
            return cls(**data)
        except ValidationError as exc:
            raise config_error_from(exc, prefix="verification config") from None

    @property
    def template_stages_enabled(self) -> bool:
        """True in ``template_only`` and ``template_and_rubric``."""
        return self.evaluation_mode != "rubric_only"

    @property
    def rubric_stages_enabled(self) -> bool:
        """True in ``template_and_rubric`` and ``rubric_only``."""
        return self.evaluation_mode != "template_only"


def _with_system_prompt(model: object, prompt: str) -> object:
    if isinstance(model, ModelConfig):
        return model if model.system_prompt else model.model_copy(update={"system_prompt": prompt})
    if isinstance(model, dict) and not model.get("system_prompt"):
        return {**model, "system_prompt": prompt}
    return model


def config_error_from(exc: ValidationError, *, prefix: str) -> ConfigError:
    """Turn a pydantic ``ValidationError`` into a :class:`ConfigError` whose message
    lists each problem as ``dotted.field.path: message``."""
    lines = []
    for err in exc.errors():
        loc = ".".join(
            f"[{part}]" if isinstance(part, int) else str(part) for part in err["loc"]
        ).replace(".[", "[")
        msg = str(err["msg"]).removeprefix("Value error, ")
        lines.append(f"{loc}: {msg}" if loc else msg)
    return ConfigError(f"{prefix}: " + "; ".join(lines))
