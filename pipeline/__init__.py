"""verifleet.pipeline — the 13-stage verification pipeline, its checks and model
adapters. Imports only :mod:`verifleet.schemas`.

Entry points: :func:`run_unit` verifies one unit of a job (a
:class:`~verifleet.schemas.Unit`, against its :class:`~verifleet.schemas.JobSpec`)
with every parsing model and returns one ``VerificationResult`` each; the answer
is generated once per unit. :func:`run_scenario` runs one multi-turn scenario
unit turn by turn through :func:`verify_question`, which takes the question,
models and rubrics spelled out. Content failures end up in the results, never as
exceptions. Create :class:`PipelineResources` once per process
(``PipelineResources.default()``) so chat clients, compiled templates, recorded
answers and the embedding model are built once and shared by all threads.

An answering model with MCP servers is answered by :class:`McpAgentRunner` (the
built-in agent runtime, replaceable through ``PipelineResources.agent``).

Stages code against :class:`ChatCaller`; :class:`LangchainChatCaller` implements
it with a per-process client cache, retries with backoff for transient errors,
JSON replies (native structured output or prompted, re-asked once, repaired) and
per-stage token accounting (:class:`UsageTracker`). :class:`OpenAIHttpChatCaller`
does the same for OpenAI-compatible endpoints over plain HTTP and is their default
(``ModelConfig.chat_client`` chooses). Model interfaces are registered by name
(:func:`register_interface`); :func:`make_chat_caller` builds a model's caller
through its interface.
"""

# --- the model-call interface and its langchain implementation -------------------

from __future__ import annotations

import typing

from verifleet import _lazy

if typing.TYPE_CHECKING:
    from ._llm import (
        CACHE_KEY_SECRET_ENV,
        MAX_ENDPOINT_PAUSE,
        CachingCaller,
        CallCache,
        CallerOptions,
        CallGate,
        CallLog,
        ChatModelCache,
        EndpointReplyError,
        DiskCallCache,
        InterfaceFactory,
        LangchainChatCaller,
        MemoryCallCache,
        OpenAIHttpChatCaller,
        RecordingCaller,
        UsageTracker,
        close_async_senders,
        call_cache_failures,
        call_key,
        credential_identity,
        default_cache_dir,
        endpoint_pause,
        get_chat_model,
        make_chat_caller,
        register_interface,
        registered_interfaces,
    )
    from ._llm_protocol import ChatCaller, Message, ModelCallError, StructuredOutputError

    # --- running a unit ---------------------------------------------------------------
    from ._bridge import (
        BridgedSandbox,
        bridged_sleep,
        call_blocking,
        in_bridge,
        run_bridged,
        sandbox_failure,
        wait_for,
    )
    from ._fair import CALLER, LINGER, FairShare
    from ._agents import AgentDeadlineError, McpAgentRunner, McpServerError
    from ._answer import CachedAnswer
    from ._adapters import ManualAnswerError, ManualAnswerStore
    from ._context import VerificationContext
    from ._failed import failed_results
    from ._orchestrator import StageOrchestrator
    from ._resources import AgentRunner, CallerFactory, PipelineResources
    from ._reverify import (
        answering_model_of,
        group_stored,
        group_stored_scenarios,
        reverify_unit,
        stored_answer,
    )
    from ._run import run_unit, verify_question
    from ._scenario import (
        ScenarioReplay,
        ScenarioRun,
        evaluate_outcomes,
        next_edge,
        run_scenario,
        run_scenario_unit,
    )
    from ._stage import Stage, StageFailure

    # --- search providers for deep judgment (Tavily on the web, BM25 offline) --------
    from ._search import (
        LocalSearch,
        SearchError,
        SearchHit,
        SearchProvider,
        TavilySearch,
        build_search_provider,
        search_function,
    )

__all__ = [
    "CACHE_KEY_SECRET_ENV",
    "CALLER",
    "LINGER",
    "MAX_ENDPOINT_PAUSE",
    "AgentDeadlineError",
    "AgentRunner",
    "BridgedSandbox",
    "CachedAnswer",
    "CachingCaller",
    "CallCache",
    "CallGate",
    "CallLog",
    "CallerFactory",
    "CallerOptions",
    "ChatCaller",
    "ChatModelCache",
    "DiskCallCache",
    "EndpointReplyError",
    "FairShare",
    "InterfaceFactory",
    "LangchainChatCaller",
    "LocalSearch",
    "ManualAnswerError",
    "ManualAnswerStore",
    "McpAgentRunner",
    "McpServerError",
    "MemoryCallCache",
    "Message",
    "ModelCallError",
    "OpenAIHttpChatCaller",
    "PipelineResources",
    "RecordingCaller",
    "ScenarioReplay",
    "ScenarioRun",
    "SearchError",
    "SearchHit",
    "SearchProvider",
    "Stage",
    "StageFailure",
    "StageOrchestrator",
    "StructuredOutputError",
    "TavilySearch",
    "UsageTracker",
    "VerificationContext",
    "answering_model_of",
    "bridged_sleep",
    "build_search_provider",
    "call_blocking",
    "call_cache_failures",
    "call_key",
    "close_async_senders",
    "credential_identity",
    "default_cache_dir",
    "endpoint_pause",
    "evaluate_outcomes",
    "failed_results",
    "get_chat_model",
    "group_stored",
    "group_stored_scenarios",
    "in_bridge",
    "make_chat_caller",
    "next_edge",
    "register_interface",
    "registered_interfaces",
    "reverify_unit",
    "run_bridged",
    "run_scenario",
    "run_scenario_unit",
    "run_unit",
    "sandbox_failure",
    "search_function",
    "stored_answer",
    "verify_question",
    "wait_for",
]


# Each name of __all__ loads on first use, from the module the TYPE_CHECKING block
# imports it from: a process that calls one OpenAI-compatible endpoint over HTTP never
# imports langchain, openai or aiohttp.
__getattr__, __dir__ = _lazy.exports(__name__)
