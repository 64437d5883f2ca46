"""Per-process caches shared by every unit a process runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

from verifleet.sandbox import SandboxPool, default_pool
from verifleet.schemas import ModelConfig, VerificationConfig

from ._adapters import ManualAnswerStore
from ._answer import CachedAnswer
from ._checks import EmbeddingModel, SearchFunction
from ._llm import (
    CachingCaller,
    CallCache,
    CallGate,
    ChatModelCache,
    RecordingCaller,
    UsageTracker,
    make_chat_caller,
)
from ._llm_protocol import ChatCaller, Message

if TYPE_CHECKING:
    from ._agents import McpAgentRunner

__all__ = ["AgentRunner", "CallerFactory", "PipelineResources"]


class CallerFactory(Protocol):
    """Builds the :class:`ChatCaller` for one model of one unit."""

    def __call__(
        self,
        model: ModelConfig,
        *,
        tracker: UsageTracker,
        config: VerificationConfig,
        deadline: float | None,
    ) -> ChatCaller: ...


class AgentRunner(Protocol):
    """Answers with a tool-using (MCP) agent; returns the trace as a CachedAnswer.

    The built-in one is :class:`~verifleet.pipeline._agents.McpAgentRunner`; a
    deployment with another runtime plugs it in as ``PipelineResources.agent``.
    It records the agent's token usage into ``tracker`` under
    ``answer_generation`` and raises on failure (the unit records the error).
    """

    def __call__(
        self,
        model: ModelConfig,
        messages: Sequence[Message],
        *,
        tracker: UsageTracker,
        config: VerificationConfig,
        deadline: float | None,
    ) -> CachedAnswer: ...


@dataclass
class PipelineResources:
    """Caches one process reuses across units: chat clients, the sandbox pool that
    runs template code, recorded answers, the embedding model. Create it once per process
    (:meth:`default`) and pass it to every :func:`~verifleet.pipeline.run_unit`.

    Attributes:
        clients: Chat models, one per model configuration.
        sandbox: The executors that run template and callable-trait code
            (templates are compiled there, once per executor per template id).
        manual: Pre-recorded answer files of ``manual`` models.
        embedder: Loads the embedding model by name (cached by the callee).
        call_gate: Entered around every model call attempt (the workers' Redis
            limiter); None for no gate.
        agent: Runs MCP agents; None for the built-in runtime
            (:meth:`agent_runner`), built on first use with this object's
            clients and call gate.
        search: A search function for deep judgment's hallucination check that
            replaces the configured provider; None: :meth:`search_for` builds the
            provider the run's config names (Tavily or local BM25).
        caller_factory: Replaces the built-in callers (tests script the models).
        call_cache: Where cached model replies live; used by runs whose config
            has ``cache: true`` (None: such runs call every model).
        sleep: Backoff sleep of retries.
        before_call: Called with the model before a caller that makes real
            calls of it is built (not for replies the call cache answers);
            what it raises fails that call. The local run waits there for
            the model's preflight call.
    """

    clients: ChatModelCache = field(default_factory=ChatModelCache)
    sandbox: SandboxPool = field(default_factory=default_pool)
    manual: ManualAnswerStore = field(default_factory=ManualAnswerStore)
    embedder: Callable[[str], EmbeddingModel] = EmbeddingModel.get
    call_gate: CallGate | None = None
    agent: AgentRunner | None = None
    search: SearchFunction | None = None
    caller_factory: CallerFactory | None = None
    call_cache: CallCache | None = None
    sleep: Callable[[float], None] = time.sleep
    before_call: Callable[[ModelConfig], None] | None = None

    _builtin_agent: McpAgentRunner | None = field(default=None, init=False, repr=False)
    _searches: dict[tuple[object, ...], SearchFunction] = field(
        default_factory=dict, init=False, repr=False
    )
    _agent_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    _default: ClassVar[PipelineResources | None] = None
    _default_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def default(cls) -> PipelineResources:
        """The process-wide instance, created on first use (thread-safe)."""
        with cls._default_lock:
            if cls._default is None:
                cls._default = cls()
            return cls._default

    def caller(
        self,
        model: ModelConfig,
        *,
        tracker: UsageTracker,
        config: VerificationConfig,
        deadline: float | None = None,
    ) -> ChatCaller:
        """A caller for ``model`` that records into ``tracker``; cheap per unit.

        ``caller_factory`` when set; otherwise direct HTTP for OpenAI-compatible
        endpoints and langchain for the rest (:func:`~verifleet.pipeline.make_chat_caller`).
        With ``config.cache`` and a :attr:`call_cache`, answered from the cache
        where the same call was made before (:class:`~verifleet.pipeline.CachingCaller`).
        With ``config.record_model_calls``, each call's messages and reply go to
        ``tracker.calls`` (:class:`~verifleet.pipeline.RecordingCaller`).
        """
        caller: ChatCaller
        if config.cache and self.call_cache is not None:
            caller = CachingCaller(
                model,
                lambda own: self._caller(model, own, config, deadline),
                tracker,
                self.call_cache,
            )
        else:
            caller = self._caller(model, tracker, config, deadline)
        return RecordingCaller(caller, tracker) if config.record_model_calls else caller

    def _caller(
        self,
        model: ModelConfig,
        tracker: UsageTracker,
        config: VerificationConfig,
        deadline: float | None,
    ) -> ChatCaller:
        if self.before_call is not None:
            self.before_call(model)
        if self.caller_factory is not None:
            return self.caller_factory(model, tracker=tracker, config=config, deadline=deadline)
        return self.model_caller(model, tracker, config, deadline)

    def model_caller(
        self,
        model: ModelConfig,
        tracker: UsageTracker,
        config: VerificationConfig,
        deadline: float | None,
    ) -> ChatCaller:
        """The model's own caller with these resources' clients, call gate and
        pauses: what a unit uses without a ``caller_factory``, and what a
        factory that only wraps it starts from."""
        return make_chat_caller(
            model,
            tracker=tracker,
            clients=self.clients,
            policy=config.retry_policy,
            request_timeout=config.request_timeout,
            deadline=deadline,
            call_gate=self.call_gate,
            sleep=self.sleep,
        )

    def agent_runner(self) -> AgentRunner:
        """``agent`` when set, else the built-in runtime (:meth:`agent_runtime`)."""
        return self.agent if self.agent is not None else self.agent_runtime()

    def agent_runtime(self) -> McpAgentRunner:
        """The built-in MCP agent runtime, built on first use (one per resources
        object, sharing its chat clients and call gate). Agentic rubric traits
        always investigate with it."""
        with self._agent_lock:
            if self._builtin_agent is None:
                # Imported on first use: units without agents never load the MCP stack.
                from ._agents import McpAgentRunner

                self._builtin_agent = McpAgentRunner(
                    clients=self.clients, call_gate=self.call_gate, call_cache=self.call_cache
                )
            return self._builtin_agent

    def search_for(self, config: VerificationConfig, *, rubric: bool = False) -> SearchFunction:
        """The search function for template (or, with ``rubric``, rubric) deep
        judgment: ``search`` when set, else the provider the config names, built
        once per process and setting (a local index is read once).

        Raises:
            SearchError: the provider cannot be built (no ``TAVILY_API_KEY``, no
                or a malformed local document collection, an unknown tool).
        """
        if self.search is not None:
            return self.search
        tool = (
            config.deep_judgment_rubric_search_tool if rubric else config.deep_judgment_search_tool
        )
        key = (
            tool.strip().lower(),
            config.deep_judgment_search_documents,
            config.deep_judgment_search_max_results,
            config.deep_judgment_search_url,
        )
        with self._agent_lock:
            found = self._searches.get(key)
            if found is None:
                from ._search import build_search_provider, search_function

                found = search_function(build_search_provider(config, rubric=rubric))
                self._searches[key] = found
            return found
