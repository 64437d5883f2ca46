"""Per-process cache of chat clients, one per model configuration.

It holds langchain chat models and, for the direct HTTP path of OpenAI-compatible
endpoints, that path's per-configuration request settings (built by its own
module and stored here so one cache owns every client of a process).

Building a client costs HTTP/TLS setup, so each configuration is built once per process under a lock and
shared by every thread; langchain chat models are safe to call concurrently.
Retries are ours (``max_retries=0`` on the client) so that backoff, jitter,
``Retry-After`` and the unit deadline are applied in exactly one place.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from verifleet.schemas import ModelConfig, interface_kind

from .._llm_protocol import ModelCallError

if TYPE_CHECKING:
    # Loaded when a langchain model is built: the direct HTTP path never needs it.
    from langchain_core.language_models import BaseChatModel

__all__ = ["ChatModelCache", "get_chat_model", "resolve_api_key"]

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"

_T = TypeVar("_T")

# The variable each provider's SDK reads when no key is passed explicitly.
_PROVIDER_KEY_ENV: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google_genai": "GOOGLE_API_KEY",
    "mistralai": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
    "together": "TOGETHER_API_KEY",
    "fireworks": "FIREWORKS_API_KEY",
    "cohere": "COHERE_API_KEY",
    "perplexity": "PPLX_API_KEY",
}


def _missing_key(model: ModelConfig, env: str) -> ModelCallError:
    return ModelCallError(
        f"missing API key for model '{model.model_name}' ({model.interface}): "
        f"set the environment variable {env}",
        transient=False,
        attempts=0,
    )


def resolve_api_key(model: ModelConfig) -> str | None:
    """The API key to pass to the client, read from the environment.

    ``api_key_env`` wins; otherwise the interface's/provider's usual variable.
    OpenAI-compatible endpoints without a configured variable get
    ``"not-needed"`` (local servers such as llama.cpp or vLLM ignore it).

    Returns:
        The key, or ``None`` to let the provider SDK find its own credentials.

    Raises:
        ModelCallError: the required variable is unset or empty (non-transient;
            the message names the variable to set).
    """
    if model.api_key_env:
        value = os.environ.get(model.api_key_env, "").strip()
        if not value:
            raise _missing_key(model, model.api_key_env)
        return value
    if model.interface == "openrouter":
        value = os.environ.get("OPENROUTER_API_KEY", "").strip()
        if not value:
            raise _missing_key(model, "OPENROUTER_API_KEY")
        return value
    if model.interface == "openai_endpoint":
        return os.environ.get("OPENAI_API_KEY", "").strip() or "not-needed"
    env = _PROVIDER_KEY_ENV.get((model.model_provider or "").lower())
    if env is not None and not os.environ.get(env, "").strip():
        raise _missing_key(model, env)
    return None


def _build(model: ModelConfig, request_timeout: float) -> BaseChatModel:
    common: dict[str, Any] = {"temperature": model.temperature, "max_retries": 0}
    if model.max_tokens is not None:
        common["max_tokens"] = model.max_tokens
    common.update(model.extra_kwargs)
    api_key = resolve_api_key(model)
    try:
        if interface_kind(model.interface) == "openai_compatible":
            from langchain_openai import ChatOpenAI

            base_url = model.endpoint_base_url or OPENROUTER_BASE_URL
            return ChatOpenAI(
                model=model.model_name,
                base_url=base_url,
                api_key=api_key,
                timeout=request_timeout,
                **common,
            )
        if model.interface == "langchain":
            from langchain.chat_models import init_chat_model
            from langchain_core.language_models import BaseChatModel

            if api_key is not None:
                common["api_key"] = api_key
            if model.endpoint_base_url:
                # e.g. provider "openai" or "ollama" served from a custom address
                common["base_url"] = model.endpoint_base_url
            built = init_chat_model(
                model.model_name,
                model_provider=model.model_provider,
                timeout=request_timeout,
                **common,
            )
            if not isinstance(built, BaseChatModel):
                raise TypeError(f"init_chat_model returned {type(built).__name__}")
            return built
    except ImportError as exc:
        raise ModelCallError(
            f"cannot build model '{model.model_name}': provider package missing ({exc})",
            transient=False,
            attempts=0,
        ) from exc
    except (ValueError, TypeError) as exc:
        raise ModelCallError(
            f"cannot build model '{model.model_name}': {exc}", transient=False, attempts=0
        ) from exc
    raise ModelCallError(
        f"interface '{model.interface}' has no chat client (model '{model.model_name}')",
        transient=False,
        attempts=0,
    )


def _cache_key(model: ModelConfig, request_timeout: float) -> str:
    # Only what changes the client: prompts, ids and fleet limits do not.
    fields = model.model_dump(
        include={
            "model_name",
            "model_provider",
            "interface",
            "endpoint_base_url",
            "api_key_env",
            "temperature",
            "max_tokens",
            "extra_kwargs",
        },
        mode="json",
    )
    return json.dumps([fields, request_timeout], sort_keys=True, default=str)


def _structured_key(model: ModelConfig) -> str:
    return f"{model.interface}|{model.model_provider}|{model.endpoint_base_url}|{model.model_name}"


class ChatModelCache:
    """Chat models built once per configuration; safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[str, BaseChatModel] = {}
        # The direct HTTP path's settings per configuration; opaque to this cache.
        self._direct: dict[str, object] = {}
        # Models whose provider rejected native structured output: asked by prompt
        # from then on, so a process pays for the failed attempt once, not per call.
        self._no_structured: set[str] = set()

    def structured_output_supported(self, model: ModelConfig) -> bool:
        """False once :meth:`disable_structured_output` was called for ``model``."""
        return _structured_key(model) not in self._no_structured

    def disable_structured_output(self, model: ModelConfig) -> None:
        """Remember that ``model``'s provider cannot do native structured output."""
        with self._lock:
            self._no_structured.add(_structured_key(model))

    def get(self, model: ModelConfig, *, request_timeout: float) -> BaseChatModel:
        """The cached client for ``model``, building it on first use.

        Raises:
            ModelCallError: the client cannot be built (missing API key, missing
                provider package, unknown provider); nothing is cached then, so a
                fixed environment is picked up by the next call.
        """
        key = _cache_key(model, request_timeout)
        cached = self._models.get(key)
        if cached is not None:
            return cached
        with self._lock:
            cached = self._models.get(key)
            if cached is None:
                cached = _build(model, request_timeout)
                self._models[key] = cached
            return cached

    def direct(self, model: ModelConfig, *, request_timeout: float, build: Callable[[], _T]) -> _T:
        """The direct-HTTP client settings for ``model``, built by ``build`` on first use.

        Raises:
            ModelCallError: whatever ``build`` raises (e.g. a missing API key);
                nothing is cached then.
        """
        key = _cache_key(model, request_timeout)
        cached = self._direct.get(key)
        if cached is None:
            with self._lock:
                cached = self._direct.get(key)
                if cached is None:
                    cached = build()
                    self._direct[key] = cached
        return cast(_T, cached)

    def put(self, model: ModelConfig, client: BaseChatModel, *, request_timeout: float) -> None:
        """Register a prebuilt client for ``model`` (e.g. a scripted model in tests)."""
        with self._lock:
            self._models[_cache_key(model, request_timeout)] = client

    def __len__(self) -> int:
        """How many model configurations have a client (of either path)."""
        return len(self._models) + len(self._direct)


_DEFAULT = ChatModelCache()


def get_chat_model(model: ModelConfig, *, request_timeout: float) -> BaseChatModel:
    """The process-wide cached langchain chat model for ``model``.

    Raises:
        ModelCallError: as :meth:`ChatModelCache.get`.
    """
    return _DEFAULT.get(model, request_timeout=request_timeout)
