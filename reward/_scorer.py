"""Scoring one request: find its question, run parse → verify → rubric on the given
response (no answer generation), and turn the results into a reward.

The service, the local rollouts scorer and the fleet's reward task all call
:meth:`RewardScorer.score`, so a rollout gets the same reward wherever it runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import statistics
import time
from collections.abc import Iterator, Sequence

from pydantic import BaseModel, ConfigDict

from verifleet.pipeline import (
    BridgedSandbox,
    CachedAnswer,
    CallCache,
    CallGate,
    ChatCaller,
    MemoryCallCache,
    Message,
    ModelCallError,
    PipelineResources,
    StructuredOutputError,
    UsageTracker,
    bridged_sleep,
    run_unit,
)
from verifleet.sandbox import SandboxPool
from verifleet.schemas import (
    Benchmark,
    ConfigError,
    JobSpec,
    ModelConfig,
    Question,
    Rubric,
    RubricError,
    TemplateValidationError,
    VerificationConfig,
    VerificationResult,
    merge_rubrics,
)

from ._compose import RewardBreakdown, compose_reward
from ._config import RewardConfig
from ._failure import Failure, classify_model_error, first_failure, note, recording
from ._request import (
    InvalidRequestError,
    PlainVerifyRequest,
    ResponsesVerifyRequest,
    UnknownQuestionError,
    request_answer,
    requested_question_id,
    requested_question_text,
)
from ._swap import EquivalenceVerdict, judge_equivalence

__all__ = ["RewardScorer", "ScoredRollout", "reward_resources"]

_log = logging.getLogger(__name__)

AnyRequest = ResponsesVerifyRequest | PlainVerifyRequest


class ScoredRollout(BaseModel):
    """The outcome of one request.

    Attributes:
        question_id: The question the response answered.
        reward: The reward (mean over the parsing models' rewards); None when
            an infrastructure failure kept the response from being verified.
        breakdowns: One reward breakdown per parsing model (empty on a failure).
        equivalence: The equivalence judge's verdict, when the config asks for one.
        results: One verification result per parsing model.
        failure: What kept the response from being verified (judge unreachable,
            executor, deadline), or None.
    """

    model_config = ConfigDict(extra="forbid")

    question_id: str
    reward: float | None
    breakdowns: list[RewardBreakdown]
    equivalence: EquivalenceVerdict | None = None
    results: list[VerificationResult]
    failure: Failure | None = None

    def verdict_fields(self) -> dict[str, object]:
        """What a scored rollout line gains: ``reward`` and the verdict fields
        (``reward: null`` and ``failure`` when it could not be verified)."""
        if self.failure is not None:
            return {
                "reward": None,
                "question_id": self.question_id,
                "failure": self.failure.model_dump(),
                "verification_error": self.failure.reason,
            }
        first = self.breakdowns[0]
        fields: dict[str, object] = {
            "reward": self.reward,
            "question_id": self.question_id,
            "verify_result": first.verify_result,
            "verify_granular_result": first.verify_granular_result,
            "reward_components": first.components or None,
            "verification_error": first.error,
        }
        if self.equivalence is not None:
            fields["equivalence"] = self.equivalence.model_dump()
        return fields


def reward_resources(
    cache: CallCache | None = None, *, call_gate: CallGate | None = None
) -> PipelineResources:
    """Pipeline resources whose judge calls go through the model-call cache
    ``cache`` (an in-process LRU when None; a reward's judge calls are always
    cached: see :class:`RewardScorer`), and note a judge that could not be
    reached, refused or ran out of time as the scoring's infrastructure failure.

    They can score bridged on an event loop (:func:`~verifleet.pipeline.run_bridged`,
    as the reward server does) as well as in threads: sandbox calls and retry
    pauses let the loop run, and an executor failure is noted as the scoring's
    infrastructure failure.
    """
    resources = PipelineResources(
        sandbox=BridgedSandbox(on_failure=_executor_failed).as_pool(),
        call_gate=call_gate,
        call_cache=cache if cache is not None else MemoryCallCache(),
        sleep=bridged_sleep,
    )

    def judge(
        model: ModelConfig,
        *,
        tracker: UsageTracker,
        config: VerificationConfig,
        deadline: float | None,
    ) -> ChatCaller:
        # The model's own caller (direct HTTP for OpenAI-compatible endpoints),
        # whose retry pauses (bridged_sleep) let an event loop run when the
        # scoring is bridged.
        caller = resources.model_caller(model, tracker, config, deadline)
        return _FailureNoting(caller)

    resources.caller_factory = judge
    return resources


class _FailureNoting:
    """A judge caller that notes why a call failed for good (:mod:`._failure`)
    and raises its error on."""

    def __init__(self, inner: ChatCaller) -> None:
        self._inner = inner

    @property
    def model_name(self) -> str:
        """The wrapped caller's model name."""
        return self._inner.model_name

    def invoke(self, messages: Sequence[Message], *, stage: str) -> str:
        """The judge's reply, as the wrapped caller's ``invoke``."""
        with _noting():
            return self._inner.invoke(messages, stage=stage)

    def invoke_json(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        schema: dict[str, object],
        schema_name: str = "response",
    ) -> dict[str, object]:
        """The judge's object, as the wrapped caller's ``invoke_json``."""
        with _noting():
            return self._inner.invoke_json(
                messages, stage=stage, schema=schema, schema_name=schema_name
            )


@contextlib.contextmanager
def _noting() -> Iterator[None]:
    try:
        yield
    except ModelCallError as exc:
        kind = classify_model_error(exc)
        if kind is not None:
            note(kind, str(exc))
        raise


def _executor_failed(exc: Exception) -> None:
    note("executor", f"{type(exc).__name__}: {exc}")


def _final_text(answer: CachedAnswer) -> str:
    for message in reversed(answer.trace_messages):
        if message.get("role") == "assistant" and str(message.get("content", "")).strip():
            return str(message["content"])
    return answer.raw_llm_response


def _cut_short(results: list[VerificationResult]) -> bool:
    return any(not r.metadata.completed_without_errors for r in results)


class RewardScorer:
    """Verifies responses to a benchmark's questions and rewards them.

    Args:
        benchmark: The benchmark whose questions the responses answer.
        parsing_models: The judges (temperature 0 for a deterministic reward).
        reward_config: How results become rewards.
        resources: Per-process caches; :func:`reward_resources` when None.
        sandbox_scope: When set, the benchmark's own templates run in the
            executors' template process of this scope (one per executor, every
            template compiled there once and kept warm, as a job's on the
            fleet); None: in one process per template source. Inline
            questions of a request (someone else's code) never run in it.
        inline_executors: Executors of their own for inline questions (0:
            they share the benchmark's). A caller whose inline templates are
            slow then holds only these: requests for the benchmark's questions
            never wait behind them.

    Raises:
        ConfigError: the reward config names unknown traits, or its
            ``verification`` fields are invalid.
    """

    def __init__(
        self,
        benchmark: Benchmark,
        parsing_models: Sequence[ModelConfig],
        reward_config: RewardConfig,
        *,
        resources: PipelineResources | None = None,
        sandbox_scope: str | None = None,
        inline_executors: int = 0,
    ) -> None:
        reward_config.check_benchmark(benchmark)
        self.sandbox_scope = sandbox_scope
        self.inline_executors = inline_executors
        self._inline: PipelineResources | None = None
        self.benchmark = benchmark
        self.reward_config = reward_config
        data: dict[str, object] = {
            "evaluation_mode": "template_and_rubric"
            if reward_config.uses_rubric
            else "template_only",
            # A trainer takes the reward, not a transcript: a judge prompt repeats
            # the rollout, so recording calls would double what every /verify
            # answer encodes. The reward config's verification can turn it on.
            "record_model_calls": False,
            **reward_config.verification,
            # Every judge call goes through the call cache: a temperature-0
            # judge is not bit-for-bit deterministic across servers, batches or
            # restarts, and a response must get the reward it got first.
            "cache": True,
            "parsing_models": list(parsing_models),
            "parsing_only": True,
            "answering_models": [],
        }
        self.config = VerificationConfig.build(**data)
        if reward_config.uses_rubric and not self.config.rubric_stages_enabled:
            raise ConfigError(
                "reward config: trait components need rubric evaluation, but "
                "verification.evaluation_mode is 'template_only'"
            )
        self.parsing_models = self.config.parsing_models
        self.spec = JobSpec(benchmark, self.config)
        for model in self.parsing_models:
            if model.temperature != 0.0:
                _log.warning(
                    "judge %s has temperature %s: rewards rely on the judge-call cache "
                    "for determinism",
                    model.model_name,
                    model.temperature,
                )
        self.resources = resources or reward_resources()
        self._by_text = {q.text.strip(): q for q in benchmark.questions}
        self._rubrics: dict[str, Rubric | None] = {}
        self._answering_models: dict[str, ModelConfig] = {}

    def inline_resources(self) -> PipelineResources:
        """The resources inline questions are scored with: :attr:`resources`
        with a sandbox pool of ``inline_executors`` executors of its own (made
        on first use; the same settings otherwise), or :attr:`resources` itself
        when ``inline_executors`` is 0."""
        if self.inline_executors <= 0:
            return self.resources
        if self._inline is None:
            settings = self.resources.sandbox.settings.model_copy(
                update={"pool_size": self.inline_executors}
            )
            sandbox = BridgedSandbox(SandboxPool(settings), on_failure=_executor_failed)
            self._inline = dataclasses.replace(self.resources, sandbox=sandbox.as_pool())
        return self._inline

    def resolve(self, request: AnyRequest) -> tuple[Question, Rubric | None]:
        """The question the request answers and its merged rubric.

        Raises:
            InvalidRequestError: unknown question id, no question matching the
                prompt, an inline template that does not compile.
        """
        if isinstance(request, PlainVerifyRequest) and request.question is not None:
            inline = request.question
            try:
                # Compiled in a sandbox executor, never in the reward server.
                self.inline_resources().sandbox.validate_template(
                    inline.answer_template, question_id=inline.id
                )
            except TemplateValidationError as exc:
                raise InvalidRequestError(f"question.answer_template: {exc.problem}") from None
            question = Question.model_validate(inline.model_dump(exclude_none=True))
            try:
                rubric = merge_rubrics(
                    self.benchmark.global_rubric, question.question_rubric, question_id=question.id
                )
            except RubricError as exc:
                raise InvalidRequestError(f"question.question_rubric: {exc}") from None
            return question, rubric
        qid = requested_question_id(request)
        if qid is not None:
            try:
                question = self.benchmark.get_question(qid)
            except KeyError:
                raise UnknownQuestionError(
                    f"unknown question id {qid!r}: benchmark {self.benchmark.name!r} "
                    f"has {len(self.benchmark.questions)} questions"
                ) from None
        else:
            assert isinstance(request, ResponsesVerifyRequest)
            text = requested_question_text(request)
            found = self._by_text.get(text)
            if found is None:
                raise UnknownQuestionError(
                    "no question_id given and the last user message of "
                    "responses_create_params.input matches no question of benchmark "
                    f"{self.benchmark.name!r}"
                )
            question = found
        if question.id not in self._rubrics:
            # Merged once per question: the benchmark does not change while
            # the scorer lives, and merging was a visible part of a request.
            self._rubrics[question.id] = self.benchmark.rubric_for(question)
        return question, self._rubrics[question.id]

    def _answering(self, request: AnyRequest) -> ModelConfig:
        name = "policy"
        if isinstance(request, ResponsesVerifyRequest):
            name = request.response.model or request.responses_create_params.model or name
        # Built once per policy name (a trainer sends one or a few), not per request.
        model = self._answering_models.get(name)
        if model is None:
            model = ModelConfig(id="rollout", model_name=name, model_provider="rollout")
            if len(self._answering_models) < 64:
                self._answering_models[name] = model
        return model

    def _equivalence(
        self, question: Question, answer: CachedAnswer, deadline: float
    ) -> EquivalenceVerdict | None:
        if not self.reward_config.uses_equivalence or not question.raw_answer:
            return None
        caller = self.resources.caller(
            self.parsing_models[0], tracker=UsageTracker(), config=self.config, deadline=deadline
        )
        try:
            return judge_equivalence(
                caller,
                question=question.text,
                reference=question.raw_answer,
                response=_final_text(answer),
                swap_check=self.reward_config.swap_check,
            )
        except (ModelCallError, StructuredOutputError) as exc:
            # Like a stage failure: the component counts 0 and the line says why.
            _log.warning("question %s: equivalence judge failed: %s", question.id, exc)
            return None

    def score(self, request: AnyRequest, *, deadline: float | None = None) -> ScoredRollout:
        """Verify the request's response and compute its reward.

        ``deadline`` (``time.monotonic()``) bounds the judge calls; by default the
        config's ``unit_deadline`` from now.

        Content failures (a judge reply that never parsed, a refused template)
        are inside the results and get the config's ``error_reward``.
        Infrastructure failures (the judge unreachable or refusing after its
        retries, a sandbox executor that failed, the deadline) give
        ``reward=None`` and a ``failure`` naming the kind. Neither is raised.

        Raises:
            InvalidRequestError: the request names no known question or carries no
                response to verify.
        """
        question, rubric = self.resolve(request)
        answer = request_answer(request)
        if deadline is None:
            deadline = time.monotonic() + self.config.unit_deadline
        inline = isinstance(request, PlainVerifyRequest) and request.question is not None
        scope = (
            contextlib.nullcontext()
            if self.sandbox_scope is None or inline
            else self.resources.sandbox.scoped(self.sandbox_scope)
        )
        resources = self.inline_resources() if inline else self.resources
        with recording() as failures, scope:
            return self._score(question, rubric, request, answer, deadline, failures, resources)

    def _score(
        self,
        question: Question,
        rubric: Rubric | None,
        request: AnyRequest,
        answer: CachedAnswer,
        deadline: float,
        failures: list[Failure],
        resources: PipelineResources,
    ) -> ScoredRollout:
        unit = self.spec.unit(question, self._answering(request), None)
        results = run_unit(unit, self.spec, resources, cached_answer=answer, deadline=deadline)
        verdict = self._equivalence(question, answer, deadline)
        if not failures and time.monotonic() >= deadline and _cut_short(results):
            failures.append(Failure(kind="timeout", reason="the deadline passed mid-verification"))
        failure = first_failure(failures)
        if failure is not None:
            return ScoredRollout(
                question_id=question.id,
                reward=None,
                breakdowns=[],
                equivalence=verdict,
                results=results,
                failure=failure,
            )
        equivalent = verdict.equivalent if verdict is not None else None
        breakdowns = [
            compose_reward(r, self.reward_config, rubric=rubric, equivalence=equivalent)
            for r in results
        ]
        return ScoredRollout(
            question_id=question.id,
            reward=statistics.fmean(b.reward for b in breakdowns),
            breakdowns=breakdowns,
            equivalence=verdict,
            results=results,
        )
