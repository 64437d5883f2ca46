"""verifleet.pipeline — the 13-stage verification pipeline, its checks and model
adapters. Imports only :mod:`verifleet.schemas`.

Entry points: :func:`run_scenario` runs one multi-turn scenario unit turn by
turn through :func:`run_unit`, which verifies one (question, answering model, replicate)
with every parsing model and returns one ``VerificationResult`` each; the answer
is generated once per unit. Content failures end up in the results, never as
exceptions. Create :class:`PipelineResources` once per process
(``PipelineResources.default()``) so chat clients, compiled templates, recorded
answers and the embedding model are built once and shared by all threads.

Stages code against :class:`ChatCaller`; :class:`LangchainChatCaller` implements
it with a per-process client cache, retries with backoff for transient errors,
JSON replies (native structured output or prompted, re-asked once, repaired) and
per-stage token accounting (:class:`UsageTracker`). :class:`OpenAIHttpChatCaller`
does the same for OpenAI-compatible endpoints over plain HTTP and is their default
(``VERIFLEET_CHAT_CLIENT=langchain`` turns it off); :func:`make_chat_caller` picks.
"""

# --- the model-call interface and its langchain implementation -------------------
from ._llm import (
    MAX_ENDPOINT_PAUSE,
    CallGate,
    ChatModelCache,
    LangchainChatCaller,
    OpenAIHttpChatCaller,
    UsageTracker,
    endpoint_pause,
    get_chat_model,
    make_chat_caller,
)
from ._llm_protocol import ChatCaller, Message, ModelCallError, StructuredOutputError

# --- running a unit ---------------------------------------------------------------
from ._answer import CachedAnswer
from ._adapters import ManualAnswerError, ManualAnswerStore
from ._context import VerificationContext
from ._orchestrator import StageOrchestrator
from ._resources import AgentRunner, CallerFactory, PipelineResources
from ._run import run_unit
from ._scenario import ScenarioRun, evaluate_outcomes, next_edge, run_scenario
from ._stage import Stage, StageFailure

__all__ = [
    "MAX_ENDPOINT_PAUSE",
    "AgentRunner",
    "CachedAnswer",
    "CallGate",
    "CallerFactory",
    "ChatCaller",
    "ChatModelCache",
    "LangchainChatCaller",
    "ManualAnswerError",
    "ManualAnswerStore",
    "Message",
    "ModelCallError",
    "OpenAIHttpChatCaller",
    "PipelineResources",
    "ScenarioRun",
    "Stage",
    "StageFailure",
    "StageOrchestrator",
    "StructuredOutputError",
    "UsageTracker",
    "VerificationContext",
    "endpoint_pause",
    "evaluate_outcomes",
    "get_chat_model",
    "make_chat_caller",
    "next_edge",
    "run_scenario",
    "run_unit",
]
