"""Scripted models for the pipeline tests.

Stage logic depends on what the answering model and the judge reply; a real
model cannot be told to refuse, to return an insufficient answer or to fail on
a given call. These fakes implement the ``ChatCaller`` protocol, reply per stage
from queues, record every call and count tokens like a real caller would.
"""

from __future__ import annotations

import textwrap
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from _support.judges import CallKind, ScriptedCallerBase
from verifleet.pipeline import PipelineResources, UsageTracker
from verifleet.pipeline._llm_protocol import Message
from verifleet.schemas import ModelConfig, Question, VerificationConfig

Reply = str | dict[str, Any] | Exception

TEMPLATE = textwrap.dedent(
    """
    from pydantic import Field

    class Answer(BaseAnswer):
        gene: str = Field(description="The gene named as the answer")

        def model_post_init(self, __context):
            self.correct = {"gene": "BCL2"}

        def verify(self) -> bool:
            return self.gene.strip().upper() == self.correct["gene"]
    """
)

ANSWERING = ModelConfig(
    model_name="answerer", interface="openai_endpoint", endpoint_base_url="http://a/v1"
)
JUDGE = ModelConfig(
    model_name="judge", interface="openai_endpoint", endpoint_base_url="http://j/v1"
)
JUDGE_2 = ModelConfig(
    model_name="judge-2", interface="openai_endpoint", endpoint_base_url="http://j/v1"
)


@dataclass
class Call:
    """One recorded call."""

    model: str
    stage: str
    messages: list[Message]
    schema: dict[str, Any] | None


@dataclass
class ScriptedModels:
    """Per-model, per-stage reply queues shared by every caller of a test.

    ``replies[model_name][stage]`` is consumed in order; when a queue holds one
    item it is repeated (so N judges can share one scripted verdict).
    """

    replies: dict[str, dict[str, list[Reply]]]
    calls: list[Call] = field(default_factory=list)
    _queues: dict[tuple[str, str], deque[Reply]] = field(default_factory=dict)

    def next_reply(self, model: str, stage: str) -> Reply:
        key = (model, stage)
        if key not in self._queues:
            script = self.replies.get(model, {}).get(stage)
            if script is None:
                raise AssertionError(f"unexpected call: model {model!r}, stage {stage!r}")
            self._queues[key] = deque(script)
        queue = self._queues[key]
        return queue.popleft() if len(queue) > 1 else queue[0]

    def stages_called(self, model: str | None = None) -> list[str]:
        return [c.stage for c in self.calls if model is None or c.model == model]

    def factory(
        self,
        model: ModelConfig,
        *,
        tracker: UsageTracker,
        config: VerificationConfig,
        deadline: float | None,
    ) -> ScriptedCaller:
        return ScriptedCaller(model.model_name, self, tracker)


class ScriptedCaller(ScriptedCallerBase):
    """A ChatCaller that replies from a :class:`ScriptedModels` script and counts
    tokens for every call that does not fail."""

    def __init__(self, model_name: str, script: ScriptedModels, tracker: UsageTracker) -> None:
        self._name = model_name
        self._script = script
        self._tracker = tracker

    @property
    def model_name(self) -> str:
        return self._name

    def _reply(
        self, kind: CallKind, messages: list[Message], stage: str, schema: dict[str, Any] | None
    ) -> Reply:
        self._script.calls.append(Call(self._name, stage, messages, schema))
        reply = self._script.next_reply(self._name, stage)
        if not isinstance(reply, Exception):
            self._tracker.record(stage, model=self._name, input_tokens=10, output_tokens=5)
        return reply


def make_question(template: str | None = TEMPLATE, **extra: Any) -> Question:
    return Question(
        id="q1",
        text="Which gene encodes the anti-apoptotic protein?",
        raw_answer="BCL2",
        answer_template=template,
        **extra,
    )


def make_config(**overrides: Any) -> VerificationConfig:
    base: dict[str, Any] = {"answering_models": [ANSWERING], "parsing_models": [JUDGE]}
    base.update(overrides)
    return VerificationConfig(**base)


def make_resources(script: ScriptedModels, **extra: Any) -> PipelineResources:
    return PipelineResources(caller_factory=script.factory, **extra)
